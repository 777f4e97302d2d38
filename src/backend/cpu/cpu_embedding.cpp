// Token embedding.
//   forward:  out[n, :] = table[tokens[n], :]
//   backward: dtable[tokens[n], :] += dout[n, :]
// The backward pass splits the columns among threads and walks the tokens in order inside each
// slice, so repeated tokens accumulate in the same order for every thread count (no atomics).
#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/op_timing.h"

namespace ct {

namespace {

template <typename T>
void embedding_forward_kernel(T* out, const int32_t* tokens, const T* table, int64_t n_tokens, int64_t width) {
#pragma omp parallel for schedule(static) if (n_tokens * width > kMinParallelElements)
  for (int64_t n = 0; n < n_tokens; ++n)
    std::memcpy(out + n * width, table + static_cast<int64_t>(tokens[n]) * width, sizeof(T) * width);
}

template <typename T>
void embedding_backward_kernel(T* dtable, const T* dout, const int32_t* tokens, int64_t n_tokens, int64_t width) {
  constexpr int64_t kColumnSlice = 64;  // one cache line of f64, four of f32
  int64_t slices = (width + kColumnSlice - 1) / kColumnSlice;
#pragma omp parallel for schedule(static) if (n_tokens * width > kMinParallelElements)
  for (int64_t slice = 0; slice < slices; ++slice) {
    int64_t begin = slice * kColumnSlice, end = std::min(width, begin + kColumnSlice);
    for (int64_t n = 0; n < n_tokens; ++n) {
      T* row = dtable + static_cast<int64_t>(tokens[n]) * width;
      const T* grad = dout + n * width;
#pragma omp simd
      for (int64_t c = begin; c < end; ++c) row[c] += grad[c];
    }
  }
}

}  // namespace

void CpuBackend::embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table) {
  const op_timing::Scope timing("embedding_forward");
  const char* op = "embedding_forward";
  DType dtype = check_float_dtype(op, "table", table);
  check_same_dtype(op, "out", out, "table", table);
  check_ndim(op, "table", table, 2);
  int64_t vocab = table.shape[0], width = table.shape[1];
  check_token_range(op, "tokens", tokens, vocab, false);
  check_numel(op, "out", out, tokens.numel() * width);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    embedding_forward_kernel(out.as<T>(), tokens.as<int32_t>(), table.as<T>(), tokens.numel(), width);
  });
}

void CpuBackend::embedding_backward(const Tensor& dtable_acc, const Tensor& dout, const Tensor& tokens) {
  const op_timing::Scope timing("embedding_backward");
  const char* op = "embedding_backward";
  DType dtype = check_float_dtype(op, "dtable_acc", dtable_acc);
  check_same_dtype(op, "dout", dout, "dtable_acc", dtable_acc);
  check_ndim(op, "dtable_acc", dtable_acc, 2);
  int64_t vocab = dtable_acc.shape[0], width = dtable_acc.shape[1];
  check_token_range(op, "tokens", tokens, vocab, false);
  check_numel(op, "dout", dout, tokens.numel() * width);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    embedding_backward_kernel(dtable_acc.as<T>(), dout.as<T>(), tokens.as<int32_t>(), tokens.numel(), width);
  });
}

}  // namespace ct
