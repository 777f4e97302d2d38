// Token embedding on the CUDA backend: the kernels and CudaBackend's do_embedding_forward /
// do_embedding_backward, one file per op as on the CPU (cpu/cpu_embedding.cpp, the reference).
//   forward:  out[n, :] = table[tokens[n], :]
//   backward: dtable[tokens[n], :] += dout[n, :]
// The backward pass is deterministic without float atomics: the positions are sorted by token with
// a stable radix sort (CUB), so each table row's positions are in increasing order; then one block
// per table row finds its run of positions by binary search and adds them up in that order.
#include <cub/device/device_radix_sort.cuh>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_limits.h"

namespace ct::cuda {

namespace {

constexpr int kThreads = 128;

template <typename TO, typename TT>
__global__ void embedding_forward_kernel(TO* out, const int32_t* tokens, const TT* table, int64_t vocab, int64_t width,
                                         int* error_word) {
  const int64_t n = blockIdx.x;
  const int32_t token = tokens[n];
  TO* out_row = out + n * width;
  if (token < 0 || token >= vocab) {
    if (threadIdx.x == 0) atomicOr(error_word, kErrorTokenOutOfRange);
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x) out_row[c] = from_float<TO>(NAN);
    return;
  }
  const TT* row = table + static_cast<int64_t>(token) * width;
  for (int64_t c = threadIdx.x; c < width; c += blockDim.x) out_row[c] = from_float<TO>(to_float(row[c]));
}

__global__ void iota_and_check_kernel(int32_t* positions, int32_t* keys, const int32_t* tokens, int64_t n,
                                      int64_t vocab, int* error_word) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    positions[i] = static_cast<int32_t>(i);
    int32_t token = tokens[i];
    if (token < 0 || token >= vocab) {
      atomicOr(error_word, kErrorTokenOutOfRange);
      token = static_cast<int32_t>(vocab);  // sorted past every row: never added
    }
    keys[i] = token;
  }
}

__device__ int64_t lower_bound(const int32_t* sorted, int64_t n, int32_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (sorted[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

template <typename TD>
__global__ void embedding_backward_rows_kernel(float* dtable, const TD* dout, const int32_t* sorted_tokens,
                                               const int32_t* sorted_positions, int64_t n, int64_t width) {
  const int32_t token = static_cast<int32_t>(blockIdx.x);
  __shared__ int64_t run[2];
  if (threadIdx.x == 0) {
    run[0] = lower_bound(sorted_tokens, n, token);
    run[1] = lower_bound(sorted_tokens, n, token + 1);
  }
  __syncthreads();
  const int64_t begin = run[0], end = run[1];
  if (begin == end) return;
  float* row = dtable + static_cast<int64_t>(token) * width;
  for (int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    float acc = 0.0f;
#pragma unroll 4
    for (int64_t i = begin; i < end; ++i) acc += to_float(dout[static_cast<int64_t>(sorted_positions[i]) * width + c]);
    row[c] += acc;
  }
}

int sort_bits(int64_t vocab) {  // keys lie in [0, vocab] (vocab marks an invalid token)
  int bits = 1;
  while ((int64_t{1} << bits) <= vocab) ++bits;
  return bits;
}

// Layout of the scratch: keys in/out, positions in/out (n int32 each), then CUB's temporary storage.
size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

size_t cub_temp_bytes(int64_t n, int64_t vocab) {
  size_t bytes = 0;
  CT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                                static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                                static_cast<int32_t*>(nullptr), static_cast<int>(n), 0,
                                                sort_bits(vocab)));
  return bytes;
}

void launch_embedding_forward(void* out, DType out_dtype, const int32_t* tokens, const void* table, DType table_dtype,
                              int64_t n_tokens, int64_t vocab, int64_t width, int* error_word, cudaStream_t stream) {
  if (n_tokens <= 0) return;
  dispatch_compute(out_dtype, table_dtype, [&](auto out_zero, auto table_zero) {
    using TO = decltype(out_zero);
    using TT = decltype(table_zero);
    embedding_forward_kernel<<<static_cast<unsigned>(n_tokens), kThreads, 0, stream>>>(
        static_cast<TO*>(out), tokens, static_cast<const TT*>(table), vocab, width, error_word);
  });
  CT_CUDA_CHECK_LAUNCH("embedding_forward");
}

// The scratch launch_embedding_backward needs for n_tokens positions.
size_t embedding_backward_scratch_bytes(int64_t n_tokens, int64_t vocab) {
  return 4 * align_up(static_cast<size_t>(n_tokens) * sizeof(int32_t)) + align_up(cub_temp_bytes(n_tokens, vocab));
}

// Deterministic: positions sorted by token (stable radix sort), then each table row sums its
// positions in order. scratch: embedding_backward_scratch_bytes(n_tokens, vocab) bytes.
void launch_embedding_backward(float* dtable, const void* dout, DType dout_dtype, const int32_t* tokens,
                               int64_t n_tokens, int64_t vocab, int64_t width, void* scratch, size_t scratch_bytes,
                               int* error_word, cudaStream_t stream) {
  if (n_tokens <= 0) return;
  check(n_tokens < INT32_MAX, "embedding_backward: at most 2^31 - 1 tokens, got ", n_tokens);
  check(scratch_bytes >= embedding_backward_scratch_bytes(n_tokens, vocab), "embedding_backward: scratch too small");
  char* base = static_cast<char*>(scratch);
  const size_t array_bytes = align_up(static_cast<size_t>(n_tokens) * sizeof(int32_t));
  auto* keys_in = reinterpret_cast<int32_t*>(base);
  auto* keys_out = reinterpret_cast<int32_t*>(base + array_bytes);
  auto* positions_in = reinterpret_cast<int32_t*>(base + 2 * array_bytes);
  auto* positions_out = reinterpret_cast<int32_t*>(base + 3 * array_bytes);
  void* temp = base + 4 * array_bytes;
  size_t temp_bytes = scratch_bytes - 4 * array_bytes;
  iota_and_check_kernel<<<grid_for(n_tokens, 256), 256, 0, stream>>>(positions_in, keys_in, tokens, n_tokens, vocab,
                                                                    error_word);
  CT_CUDA_CHECK_LAUNCH("embedding_backward_iota");
  CT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, positions_in, positions_out,
                                                static_cast<int>(n_tokens), 0, sort_bits(vocab), stream));
  dispatch_compute(dout_dtype, [&](auto zero) {
    using TD = decltype(zero);
    embedding_backward_rows_kernel<<<static_cast<unsigned>(vocab), kThreads, 0, stream>>>(
        dtable, static_cast<const TD*>(dout), keys_out, positions_out, n_tokens, width);
  });
  CT_CUDA_CHECK_LAUNCH("embedding_backward_rows");
}

}  // namespace

void CudaBackend::do_embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table) {
  OpCall call = graph_call("embedding_forward", Signature().tensor(out).tensor(tokens).tensor(table),
                           {out, tokens, table});
  if (!call.launch) return;
  launch_embedding_forward(out.data, out.dtype, tokens.as<int32_t>(), table.data, table.dtype, tokens.numel(),
                           table.shape[0], table.shape[1], error_word_, stream_);
}

void CudaBackend::do_embedding_backward(const Tensor& dtable_acc, const Tensor& dout, const Tensor& tokens) {
  const int64_t count = tokens.numel(), vocab = dtable_acc.shape[0], width = dtable_acc.shape[1];
  OpCall call = graph_call("embedding_backward", Signature().tensor(dtable_acc).tensor(dout).tensor(tokens),
                           {dtable_acc, dout, tokens});
  if (!call.launch || count == 0) return;
  const size_t bytes = embedding_backward_scratch_bytes(count, vocab);
  void* sort_scratch = scratch("embedding_sort", bytes);
  launch_embedding_backward(dtable_acc.as<float>(), dout.data, dout.dtype, tokens.as<int32_t>(), count, vocab, width,
                            sort_scratch, bytes, error_word_, stream_);
}

}  // namespace ct::cuda
