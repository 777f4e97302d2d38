#pragma once
// Device-test helpers: CUDA backends (skipped when no GPU is present), the CPU backend as the
// reference (backend_test_support.h's cpu()), and tensors that hold the same values on both. Inputs
// are drawn fresh (seeded) for every check; outputs are poisoned (NaN) before each run so that an
// unwritten element fails.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_test_support.h"  // cpu(), Values, random_values, expect_error
#include "util/error.h"

namespace ct::test {

struct CudaFlavour {
  std::string matmul_precision = "f32";
  bool fp8 = false;
  std::string attention = "auto";  // BackendOptions::attention: auto (flash), flash, cudnn or reference
  bool operator<(const CudaFlavour& o) const {
    return std::tie(matmul_precision, fp8, attention) < std::tie(o.matmul_precision, o.fp8, o.attention);
  }
};

inline std::string& cuda_skip_reason() {
  static std::string reason;
  return reason;
}

// A CUDA backend of the given flavour, or nullptr (with the reason in cuda_skip_reason()) when none
// can start: when the default flavour cannot, no flavour is tried again; another flavour's failure
// (e.g. cuDNN attention in a build without it) concerns that flavour alone.
inline Backend* cuda(const CudaFlavour& flavour = {}) {
  static std::map<CudaFlavour, std::unique_ptr<Backend>> backends;
  static std::map<CudaFlavour, std::string> failed;
  static bool unavailable = false;
  if (unavailable) return nullptr;
  if (auto found = backends.find(flavour); found != backends.end()) return found->second.get();
  if (auto refused = failed.find(flavour); refused != failed.end()) {
    cuda_skip_reason() = refused->second;
    return nullptr;
  }
  try {
    BackendOptions options;
    options.name = "cuda";
    options.matmul_precision = parse_matmul_precision(flavour.matmul_precision, "CudaFlavour");
    options.fp8 = flavour.fp8;
    options.attention = parse_attention_kernels(flavour.attention, "CudaFlavour");
    return (backends[flavour] = create_backend(options)).get();
  } catch (const Error& e) {
    cuda_skip_reason() = e.what();
    if (flavour.attention == "auto") unavailable = true;
    else failed[flavour] = e.what();
    return nullptr;
  }
}

#define CT_REQUIRE_CUDA()                                                                        \
  do {                                                                                           \
    if (!::ct::test::cuda()) GTEST_SKIP() << "no CUDA device: " << ::ct::test::cuda_skip_reason(); \
  } while (0)

// Values rounded to bf16 (so that both backends start from the same numbers in bf16 tests).
inline Values round_to_bf16(const Values& values) {
  Values out(values.size());
  Buffer tmp(cpu(), Shape{static_cast<int64_t>(values.size())}, DType::bf16);
  cpu().upload(tmp, values.data(), DType::f64);
  cpu().download(out.data(), DType::f64, tmp);
  return out;
}

inline Buffer make(Backend& backend, const Shape& shape, DType dtype, const Values& values) {
  Buffer buffer(backend, shape, dtype);
  EXPECT_EQ(static_cast<int64_t>(values.size()), shape.numel());
  backend.upload(buffer, values.data(), DType::f64);
  return buffer;
}

inline Buffer make_ids(Backend& backend, const Shape& shape, const std::vector<int32_t>& ids) {
  Buffer buffer(backend, shape, DType::i32);
  backend.upload(buffer, ids.data(), DType::i32);
  return buffer;
}

// An output buffer filled with NaN (or -1 for i32): every element the op fails to write shows.
inline Buffer poisoned(Backend& backend, const Shape& shape, DType dtype) {
  Buffer buffer(backend, shape, dtype);
  backend.fill(buffer, dtype == DType::i32 ? -1.0 : NAN);
  return buffer;
}

inline Values read(Backend& backend, const Tensor& t) {
  Values values(static_cast<size_t>(t.numel()));
  backend.download(values.data(), DType::f64, t);
  return values;
}

inline std::vector<int32_t> read_ids(Backend& backend, const Tensor& t) {
  std::vector<int32_t> ids(static_cast<size_t>(t.numel()));
  backend.download(ids.data(), DType::i32, t);
  return ids;
}

// ||a - b|| / ||b|| (METHOD.md's measure); infinite when a holds a NaN or an Inf.
inline double norm_relative_error(const Values& a, const Values& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

// max |a - b| / max |b|: no element may be far off even when the norm is fine.
inline double max_relative_error(const Values& a, const Values& b) {
  double diff = 0, ref = 1e-30;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    diff = std::max(diff, std::abs(a[i] - b[i]));
    ref = std::max(ref, std::abs(b[i]));
  }
  return diff / ref;
}

// Both measures under the tolerance (the max measure gets 4x: one element may round the other way).
#define CT_EXPECT_CLOSE(actual, expected, tolerance)                                                      \
  do {                                                                                                   \
    const auto& ct_a_ = (actual);                                                                        \
    const auto& ct_e_ = (expected);                                                                      \
    EXPECT_LT(::ct::test::norm_relative_error(ct_a_, ct_e_), (tolerance)) << #actual " vs " #expected;   \
    EXPECT_LT(::ct::test::max_relative_error(ct_a_, ct_e_), 4 * (tolerance)) << #actual " vs " #expected; \
  } while (0)

// Tolerances of the issue: f32 paths within 1e-4, bf16 storage/compute within 1e-2.
inline double tolerance_for(DType dtype) { return dtype == DType::bf16 ? 1e-2 : 1e-4; }

}  // namespace ct::test
