// Token embedding.
//   forward:  out[n, :] = table[tokens[n], :]
//   backward: dtable[tokens[n], :] += dout[n, :]
// The backward pass splits the columns among threads and walks the tokens in order inside each
// slice, so repeated tokens accumulate in the same order for every thread count (no atomics).
#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_backend_impl.h"

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

void CpuBackend::do_embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table) {
  const char* op = "embedding_forward";
  check_same_dtype(op, "out", out, "table", table);  // no kernel converts between them
  int64_t vocab = table.shape[0], width = table.shape[1];
  check_token_range(op, "tokens", tokens, vocab, false);
  dispatch_float(table.dtype, [&](auto zero) {
    using T = decltype(zero);
    embedding_forward_kernel(out.as<T>(), tokens.as<int32_t>(), table.as<T>(), tokens.numel(), width);
  });
}

void CpuBackend::do_embedding_backward(const Tensor& dtable_acc, const Tensor& dout, const Tensor& tokens) {
  const char* op = "embedding_backward";
  check_same_dtype(op, "dout", dout, "dtable_acc", dtable_acc);  // no kernel converts between them
  int64_t vocab = dtable_acc.shape[0], width = dtable_acc.shape[1];
  check_token_range(op, "tokens", tokens, vocab, false);
  dispatch_float(dtable_acc.dtype, [&](auto zero) {
    using T = decltype(zero);
    embedding_backward_kernel(dtable_acc.as<T>(), dout.as<T>(), tokens.as<int32_t>(), tokens.numel(), width);
  });
}

}  // namespace ct
