// The CUDA backend's products and attention, called by Backend's public ops once the op contract
// holds (op_contract.h): the kernels' own limits (cuda_limits.h), the graph-region call, then the
// cuBLASLt product (cuda_gemm.h) or the attention kernels (cuda_kernels.h, cuDNN). The row-wise and
// elementwise model ops keep their host code beside their kernels (cuda_<op>.cu).
#include <cstdint>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_limits.h"
#include "backend/cuda/cudnn_attention.h"

namespace ct::cuda {

namespace {

GemmOperand operand_of(DType dtype) { return dtype == DType::bf16 ? GemmOperand::bf16 : GemmOperand::f32; }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

// ---- gemm ------------------------------------------------------------------------------------------

void CudaBackend::do_gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b,
                          double alpha, double beta) {
  const GemmShape shape = gemm_shape(a, b, transpose_a, transpose_b);
  OpCall call = graph_call("gemm",
                           Signature().tensor(a).tensor(b).tensor(c).integer(transpose_a).integer(transpose_b).real(alpha).real(beta),
                           {a, b, c});
  if (!call.launch || shape.m == 0 || shape.n == 0) return;
  if (shape.k == 0) {  // an empty sum: c = beta c
    launch_scale(c.data, c.dtype, scalar(beta), c.numel(), stream_);
    return;
  }
  GemmCall g;
  g.a = a.data;
  g.b = b.data;
  g.c = c.data;
  g.a_rows = a.shape[0];
  g.a_cols = a.shape[1];
  g.b_rows = b.shape[0];
  g.b_cols = b.shape[1];
  g.transpose_a = transpose_a;
  g.transpose_b = transpose_b;
  g.operands = operand_of(a.dtype);
  g.c_dtype = c.dtype;
  g.alpha = alpha;
  g.beta = beta;
  g.f32_fast_bf16 = matmul_bf16_;
  gemm_->run(g, stream_);
}

// y = x W^T + beta y in fp8: amax of x and of W, power-of-two scales, e4m3 copies, one cuBLASLt
// product that multiplies the scales back (fp8.h). Falls back to gemm() when fp8 is off or the
// shapes do not suit cuBLASLt's fp8 kernels.
void CudaBackend::do_linear_forward_fp8(const Tensor& x, const Tensor& w, const Tensor& y, double beta) {
  const GemmShape shape = gemm_shape(x, w, false, true);
  if (!fp8_ || !fp8_shapes_supported(shape)) {
    gemm(x, w, y, false, true, 1.0, beta);
    return;
  }
  OpCall call = graph_call("linear_forward_fp8", Signature().tensor(x).tensor(w).tensor(y).real(beta), {x, w, y});
  if (!call.launch) return;
  auto* amax = static_cast<unsigned int*>(scratch("fp8_amax", 2 * sizeof(unsigned int)));
  // x: quant, dequant; w: the same; each kFp8ScaleStride floats (16 bytes) from the last
  auto* scales = static_cast<float*>(scratch("fp8_scales", 4 * kFp8ScaleStride * sizeof(float)));
  void* x_fp8 = scratch("fp8_x", static_cast<size_t>(x.numel()));
  void* w_fp8 = scratch("fp8_w", static_cast<size_t>(w.numel()));
  CT_CUDA_CHECK(cudaMemsetAsync(amax, 0, 2 * sizeof(unsigned int), stream_));
  launch_amax(amax, x.data, x.dtype, x.numel(), stream_);
  launch_amax(amax + 1, w.data, w.dtype, w.numel(), stream_);
  launch_fp8_scales(scales, amax, stream_);
  launch_fp8_scales(scales + 2 * kFp8ScaleStride, amax + 1, stream_);
  launch_fp8_quantize(x_fp8, x.data, x.dtype, x.numel(), scales, stream_);
  launch_fp8_quantize(w_fp8, w.data, w.dtype, w.numel(), scales + 2 * kFp8ScaleStride, stream_);
  GemmCall g;
  g.a = x_fp8;
  g.b = w_fp8;
  g.c = y.data;
  g.a_rows = x.shape[0];
  g.a_cols = x.shape[1];
  g.b_rows = w.shape[0];
  g.b_cols = w.shape[1];
  g.transpose_a = false;
  g.transpose_b = true;
  g.operands = GemmOperand::fp8_e4m3;
  g.c_dtype = y.dtype;
  g.alpha = 1.0;
  g.beta = beta;
  g.a_scale = scales + kFp8ScaleStride;
  g.b_scale = scales + 3 * kFp8ScaleStride;
  gemm_->run(g, stream_);
}

// ---- attention -------------------------------------------------------------------------------------------

void CudaBackend::do_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                       const Tensor& v, double scale) {
  const AttentionDims d = attention_dims(q, k);
  check_head_dim("attention_forward", d.head_dim, q);
  OpCall call = graph_call("attention_forward", Signature().tensor(out).tensor(lse).tensor(q).tensor(k).tensor(v).real(scale),
                           {out, lse, q, k, v});
  if (!call.launch) return;
  const bool aligned = aligned16(q.data) && aligned16(k.data) && aligned16(v.data) && aligned16(out.data);
  if (cudnn_attention_ && aligned && CudnnAttention::supports(q.dtype, d)) {
    cudnn_attention_->forward(out.data, lse.as<float>(), q.data, k.data, v.data, d, scale,
                              [this](size_t bytes) { return scratch("attention_cudnn_workspace", bytes); });
  } else if (attention_ != AttentionKernels::reference && aligned && flash_attention_supports(q.dtype, d.head_dim)) {
    launch_attention_forward_flash(out.data, lse.as<float>(), q.data, k.data, v.data, d, scale, stream_);
  } else {
    launch_attention_forward_reference(out.data, lse.as<float>(), q.data, k.data, v.data, q.dtype, d, scale, stream_);
  }
}

void CudaBackend::do_attention_backward(const Tensor& dq_out, const Tensor& dk_out, const Tensor& dv_out,
                                        const Tensor& dout, const Tensor& out, const Tensor& lse, const Tensor& q,
                                        const Tensor& k, const Tensor& v, double scale) {
  const AttentionDims d = attention_dims(q, k);
  check_head_dim("attention_backward", d.head_dim, q);
  OpCall call = graph_call("attention_backward",
                           Signature().tensor(dq_out).tensor(dk_out).tensor(dv_out).tensor(dout).tensor(out).tensor(lse)
                               .tensor(q).tensor(k).tensor(v).real(scale),
                           {dq_out, dk_out, dv_out, dout, out, lse, q, k, v});
  if (!call.launch) return;
  // The kernels write gradients in the operands' dtype. An f32 gradient of bf16 operands (the model's
  // mixed precision) is written to bf16 scratch and widened into place afterwards: exact widening, but
  // the gradient carries bf16's rounding (the CPU backend's AMX kernels write f32 directly).
  void* grads[3] = {dq_out.data, dk_out.data, dv_out.data};
  const Tensor* grad_tensors[3] = {&dq_out, &dk_out, &dv_out};
  const char* scratch_names[3] = {"attention_dq", "attention_dk", "attention_dv"};
  for (int i = 0; i < 3; ++i)
    if (grad_tensors[i]->dtype != q.dtype)
      grads[i] = scratch(scratch_names[i], dtype_size(q.dtype) * static_cast<size_t>(grad_tensors[i]->numel()));
  bool aligned = true;  // the flash kernels' rows (they read out only through the delta kernel)
  for (const void* p : {grads[0], grads[1], grads[2], dout.data, q.data, k.data, v.data})
    aligned = aligned && aligned16(p);
  if (cudnn_attention_ && aligned && aligned16(out.data) && CudnnAttention::supports(q.dtype, d)) {
    cudnn_attention_->backward(grads[0], grads[1], grads[2], dout.data, out.data, lse.as<float>(), q.data, k.data,
                               v.data, d, scale,
                               [this](size_t bytes) { return scratch("attention_cudnn_workspace", bytes); });
  } else {
    // delta: dout . out per query, scratch of the clocktrain kernels (cuDNN keeps its own)
    auto* delta = static_cast<float*>(scratch("attention_delta", sizeof(float) * static_cast<size_t>(lse.numel())));
    if (attention_ != AttentionKernels::reference && aligned && flash_attention_supports(q.dtype, d.head_dim)) {
      launch_attention_backward_flash(grads[0], grads[1], grads[2], dout.data, out.data, lse.as<float>(), q.data,
                                      k.data, v.data, d, scale, delta, stream_);
    } else {
      launch_attention_backward_reference(grads[0], grads[1], grads[2], dout.data, out.data, lse.as<float>(), q.data,
                                          k.data, v.data, q.dtype, d, scale, delta, stream_);
    }
  }
  for (int i = 0; i < 3; ++i)
    if (grads[i] != grad_tensors[i]->data)
      launch_convert(grad_tensors[i]->data, grad_tensors[i]->dtype, grads[i], q.dtype, grad_tensors[i]->numel(), stream_);
}

}  // namespace ct::cuda
