#include "backend/cpu/convert.h"

#include <cstring>

#include "backend/cpu/bf16.h"
#include "util/error.h"

namespace ct {

namespace {

// Loads and stores through float/double so that every float pair shares one loop.
template <typename T>
struct Element {
  static double load(const T* p, int64_t i) { return static_cast<double>(p[i]); }
  static void store(T* p, int64_t i, double value) { p[i] = static_cast<T>(value); }
};

template <>
struct Element<uint16_t> {  // bf16
  static double load(const uint16_t* p, int64_t i) { return bf16_to_float(p[i]); }
  static void store(uint16_t* p, int64_t i, double value) { p[i] = double_to_bf16(value); }
};

template <typename Dst, typename Src>
void convert_loop(void* dst, const void* src, int64_t count) {
  auto* d = static_cast<Dst*>(dst);
  const auto* s = static_cast<const Src*>(src);
#pragma omp parallel for schedule(static) if (count > (1 << 16))
  for (int64_t i = 0; i < count; ++i) Element<Dst>::store(d, i, Element<Src>::load(s, i));
}

// The two conversions of mixed precision, written for the vectoriser: an f32 value rounds to bf16
// in one step (float_to_bf16 gives the same bits as double_to_bf16 of the same value), and a bf16
// widens to f32 exactly.
template <>
void convert_loop<uint16_t, float>(void* dst, const void* src, int64_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* s = static_cast<const float*>(src);
#pragma omp parallel for simd schedule(static) if (count > (1 << 16))
  for (int64_t i = 0; i < count; ++i) d[i] = float_to_bf16(s[i]);
}

template <>
void convert_loop<float, uint16_t>(void* dst, const void* src, int64_t count) {
  auto* d = static_cast<float*>(dst);
  const auto* s = static_cast<const uint16_t*>(src);
#pragma omp parallel for simd schedule(static) if (count > (1 << 16))
  for (int64_t i = 0; i < count; ++i) d[i] = bf16_to_float(s[i]);
}

template <typename Dst>
void convert_from(void* dst, const void* src, DType src_dtype, int64_t count) {
  switch (src_dtype) {
    case DType::f32: convert_loop<Dst, float>(dst, src, count); break;
    case DType::f64: convert_loop<Dst, double>(dst, src, count); break;
    case DType::bf16: convert_loop<Dst, uint16_t>(dst, src, count); break;
    case DType::i32: break;  // excluded by the caller
  }
}

bool is_float(DType dtype) { return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16; }

}  // namespace

void convert_elements(const char* op, void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t count) {
  if (count <= 0) return;
  if (dst_dtype == src_dtype) {
    std::memmove(dst, src, static_cast<size_t>(count) * dtype_size(dst_dtype));
    return;
  }
  check(is_float(dst_dtype) && is_float(src_dtype), op, ": cannot convert ", dtype_name(src_dtype), " to ",
        dtype_name(dst_dtype), " (i32 converts only to i32)");
  switch (dst_dtype) {
    case DType::f32: convert_from<float>(dst, src, src_dtype, count); break;
    case DType::f64: convert_from<double>(dst, src, src_dtype, count); break;
    case DType::bf16: convert_from<uint16_t>(dst, src, src_dtype, count); break;
    case DType::i32: break;
  }
}

}  // namespace ct
