// The model's ops on the CUDA backend, called by Backend's public ops once the op contract holds
// (op_contract.h): the kernels' own limits (cuda_limits.h), the graph-region call, then the kernel
// launch (cuda_kernels.h) or the cuBLASLt product (cuda_gemm.h).
#include <cstdint>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_limits.h"
#include "backend/cuda/cudnn_attention.h"

namespace ct::cuda {

namespace {

GemmOperand operand_of(DType dtype) { return dtype == DType::bf16 ? GemmOperand::bf16 : GemmOperand::f32; }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

struct RopeShape {
  int64_t batch, time, heads, head_dim;
  int64_t rows() const { return batch * time * heads; }
};

// x [B, T, H, D] (checked by the contract), within the kernels' head_dim limit.
RopeShape rope_shape(const char* op, const Tensor& x) {
  const RopeShape s{x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
  check_head_dim(op, s.head_dim, x);
  return s;
}

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

// ---- embedding -------------------------------------------------------------------------------------

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

// ---- norms -------------------------------------------------------------------------------------------

void CudaBackend::do_rmsnorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, double eps) {
  const RowShape s = rows_of(x);
  OpCall call = graph_call("rmsnorm_forward", Signature().tensor(y).tensor(rstd).tensor(x).real(eps), {y, rstd, x});
  if (!call.launch) return;
  launch_rmsnorm_forward(y.data, y.dtype, rstd.as<float>(), x.data, x.dtype, s.rows, s.width, eps, stream_);
}

void CudaBackend::do_rmsnorm_backward(const Tensor& dx_acc, const Tensor& dy, const Tensor& y, const Tensor& rstd) {
  const RowShape s = rows_of(y);
  OpCall call = graph_call("rmsnorm_backward", Signature().tensor(dx_acc).tensor(dy).tensor(y).tensor(rstd),
                           {dx_acc, dy, y, rstd});
  if (!call.launch) return;
  launch_rmsnorm_backward(dx_acc.data, dx_acc.dtype, dy.data, dy.dtype, y.data, y.dtype, rstd.as<float>(), s.rows,
                          s.width, stream_);
}

void CudaBackend::do_rope_qknorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& cos,
                                         const Tensor& sin, int64_t pos_offset, double eps) {
  const RopeShape s = rope_shape("rope_qknorm_forward", x);
  OpCall call = graph_call("rope_qknorm_forward",
                           Signature().tensor(y).tensor(rstd).tensor(x).tensor(cos).tensor(sin).integer(pos_offset).real(eps),
                           {y, rstd, x, cos, sin});
  if (!call.launch) return;
  const int64_t half = s.head_dim / 2;
  launch_rope_qknorm_forward(y.data, y.dtype, rstd.as<float>(), x.data, x.dtype, cos.as<float>() + pos_offset * half,
                             sin.as<float>() + pos_offset * half, s.rows(), s.heads, s.time, s.head_dim, eps, stream_);
}

void CudaBackend::do_rope_qknorm_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& y,
                                          const Tensor& rstd, const Tensor& cos, const Tensor& sin,
                                          int64_t pos_offset) {
  const char* op = "rope_qknorm_backward";
  const RopeShape s = rope_shape(op, y);
  OpCall call = graph_call(op, Signature().tensor(dx_out).tensor(dy).tensor(y).tensor(rstd).tensor(cos).tensor(sin).integer(pos_offset),
                           {dx_out, dy, y, rstd, cos, sin});
  if (!call.launch) return;
  const int64_t half = s.head_dim / 2;
  launch_rope_qknorm_backward(dx_out.data, dx_out.dtype, dy.data, dy.dtype, y.data, y.dtype, rstd.as<float>(),
                              cos.as<float>() + pos_offset * half, sin.as<float>() + pos_offset * half, s.rows(),
                              s.heads, s.time, s.head_dim, stream_);
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

// ---- softcapped cross-entropy ---------------------------------------------------------------------------

void CudaBackend::do_softcap_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                                   const Tensor& targets, double softcap) {
  const RowShape s = rows_of(logits);
  OpCall call = graph_call("softcap_cross_entropy_forward",
                           Signature().tensor(losses).tensor(argmax).tensor(logits).tensor(targets).real(softcap),
                           {losses, argmax, logits, targets});
  if (!call.launch) return;
  launch_cross_entropy_forward(losses.as<float>(), argmax.empty() ? nullptr : argmax.as<int32_t>(), logits.data,
                               logits.dtype, targets.as<int32_t>(), s.rows, s.width, softcap, error_word_, stream_);
}

void CudaBackend::do_softcap_cross_entropy_backward(const Tensor& dlogits_out, const Tensor& logits,
                                                    const Tensor& targets, double softcap, double loss_scale) {
  const RowShape s = rows_of(logits);
  OpCall call = graph_call("softcap_cross_entropy_backward",
                           Signature().tensor(dlogits_out).tensor(logits).tensor(targets).real(softcap),
                           {dlogits_out, logits, targets}, {loss_scale});
  if (!call.launch) return;
  launch_cross_entropy_backward(dlogits_out.data, dlogits_out.dtype, logits.data, logits.dtype, targets.as<int32_t>(),
                                s.rows, s.width, softcap, call.scalar(0), stream_);
}

}  // namespace ct::cuda
