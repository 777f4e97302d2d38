#pragma once
// The CUDA backend's kernel launchers: plain C++ declarations, defined in the kernels_*.cu files,
// called by the host code (cuda_backend.cpp, cuda_ops.cpp, cuda_optim.cpp). An op kept in one file with
// its kernels and its do_<op> (cuda_<op>.cu, as the CPU's cpu_<op>.cpp) declares nothing here. Every launcher queues work on `stream`
// and checks the launch; shapes and dtypes were validated by the caller (backend/op_contract.h, cuda_limits.h).
//
// Float dtypes of the kernels: f32 and bf16 (storage; arithmetic in f32). f64 tensors can be
// allocated, filled, copied, uploaded and downloaded, nothing else.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/tensor.h"

#if defined(__CUDACC__)
#define CT_HOST_DEVICE __host__ __device__
#else
#define CT_HOST_DEVICE
#endif

namespace ct::cuda {

// A scalar argument: its value, or, inside a recorded graph, the device address it is read from at
// run time (so that a replay can use a new learning rate without recording again).
struct ScalarArg {
  double value = 0.0;
  const double* device = nullptr;
#if defined(__CUDACC__)
  __device__ __forceinline__ double get() const { return device ? *device : value; }
#endif
};

inline ScalarArg scalar(double value) { return ScalarArg{value, nullptr}; }

// Bits of the device-side error word (CudaBackend checks it at every wait).
enum DeviceErrorBits : int {
  kErrorTokenOutOfRange = 1,   // embedding: a token id outside [0, vocab)
  kErrorTargetOutOfRange = 2,  // cross-entropy: a target >= vocab
};

// ---- elementwise (kernels_elementwise.cu) ---------------------------------------------------------
void launch_fill(void* x, DType dtype, int64_t n, ScalarArg value, cudaStream_t stream);
// dst = src converted (f32, f64, bf16 among themselves; i32 -> i32 is a plain copy by the caller)
void launch_convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n, cudaStream_t stream);
void launch_axpby(void* y, DType dtype, ScalarArg alpha, const void* x, ScalarArg beta, int64_t n,
                  cudaStream_t stream);
void launch_scale(void* x, DType dtype, ScalarArg factor, int64_t n, cudaStream_t stream);
// Deterministic sum (or sum of squares) of x into *out (a double in device memory): `out` is
// overwritten, or added to when accumulate. `partials` needs reduce_partials_count(n) doubles.
int64_t reduce_partials_count(int64_t n);
void launch_reduce(double* out, bool accumulate, bool squares, const void* x, DType dtype, int64_t n, double* partials,
                   cudaStream_t stream);
// AdamW on f32 param/grad/m/v. bias corrections are 1 - beta^t, computed by the caller.
void launch_adamw(float* param, const float* grad, float* m, float* v, int64_t n, ScalarArg lr, ScalarArg beta1,
                  ScalarArg beta2, ScalarArg eps, ScalarArg weight_decay, ScalarArg bias_correction1,
                  ScalarArg bias_correction2, cudaStream_t stream);
void launch_muon_momentum(float* u, float* buf, const float* grad, int64_t n, ScalarArg mu, cudaStream_t stream);
// Muon's update with cautious weight decay: param -= lr u + lr_decay param [u param >= 0] (f32).
void launch_muon_update(float* param, const float* u, int64_t n, ScalarArg lr, ScalarArg lr_decay, cudaStream_t stream);
// dst = src * (1 / (sqrt(*sum_squares) + eps)), dst and src of any float dtype pair (f32/bf16).
void launch_scale_by_inverse_norm(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n,
                                  const double* sum_squares, double eps, cudaStream_t stream);

// ---- fp8 (kernels_elementwise.cu) -----------------------------------------------------------------
// amax_bits: one unsigned int in device memory, zeroed by the caller; receives max|x| as float bits.
void launch_amax(unsigned int* amax_bits, const void* x, DType dtype, int64_t n, cudaStream_t stream);
// Scales sit kFp8ScaleStride floats apart: cuBLASLt refuses (CUBLAS_STATUS_NOT_SUPPORTED, from
// cublasLtMatmul after its heuristic accepted the call) a scale pointer that is not 16-byte aligned
// (seen on the H200: offsets 4 and 12 refused, 0 and 16 accepted).
constexpr int64_t kFp8ScaleStride = 4;
// scales[0] = quantisation scale 448/amax (1 when amax is 0 or not finite),
// scales[kFp8ScaleStride] = its inverse (the dequantisation scale cuBLASLt reads).
void launch_fp8_scales(float* scales, const unsigned int* amax_bits, cudaStream_t stream);
// q = e4m3(x * scales[0]), saturating to +-448.
void launch_fp8_quantize(void* q, const void* x, DType dtype, int64_t n, const float* scales, cudaStream_t stream);

// ---- attention (kernels_attention.cu: reference; kernels_flash.cu: tensor cores) --------------------
struct AttentionDims {
  int64_t batch, query_len, key_len, heads, kv_heads, head_dim;
};
// Reference kernels: any head_dim <= 256, f32 or bf16 storage, f32 arithmetic.
void launch_attention_forward_reference(void* out, float* lse, const void* q, const void* k, const void* v,
                                        DType dtype, const AttentionDims& dims, double scale, cudaStream_t stream);
// delta: scratch f32 [B, H, Tq] (dout . out per query).
void launch_attention_backward_reference(void* dq, void* dk, void* dv, const void* dout, const void* out,
                                         const float* lse, const void* q, const void* k, const void* v, DType dtype,
                                         const AttentionDims& dims, double scale, float* delta, cudaStream_t stream);
// delta[b, h, i] = dout_i . out_i (f32), the row sums of the softmax backward.
void launch_attention_delta(float* delta, const void* dout, const void* out, DType dtype, const AttentionDims& dims,
                            cudaStream_t stream);
// Tensor-core (mma.sync bf16) kernels: bf16 only, head_dim 64 or 128, rows 16-byte aligned.
bool flash_attention_supports(DType dtype, int64_t head_dim);
void launch_attention_forward_flash(void* out, float* lse, const void* q, const void* k, const void* v,
                                    const AttentionDims& dims, double scale, cudaStream_t stream);
void launch_attention_backward_flash(void* dq, void* dk, void* dv, const void* dout, const void* out,
                                     const float* lse, const void* q, const void* k, const void* v,
                                     const AttentionDims& dims, double scale, float* delta, cudaStream_t stream);

}  // namespace ct::cuda
