// Optimizer updates on the CUDA backend: AdamW, Muon's momentum and update, Newton-Schulz (docs/model.md).
#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_limits.h"

namespace ct::cuda {

// f32 only (check_cuda_dtype on param; the contract gives grad, m and v param's dtype).
void CudaBackend::do_adamw_update(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                                  double lr, double beta1, double beta2, double eps, double weight_decay,
                                  int64_t step) {
  const char* op = "adamw_update";
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  // Every number is a scalar argument: a recorded optimizer region replays with new lr and step.
  OpCall call = graph_call(op, Signature().tensor(param).tensor(grad).tensor(m).tensor(v), {param, grad, m, v},
                           {lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2});
  if (!call.launch) return;
  launch_adamw(param.as<float>(), grad.as<float>(), m.as<float>(), v.as<float>(), param.numel(), call.scalar(0),
               call.scalar(1), call.scalar(2), call.scalar(3), call.scalar(4), call.scalar(5), call.scalar(6), stream_);
}

// f32 only, as adamw_update.
void CudaBackend::do_muon_momentum(const Tensor& u_out, const Tensor& buf, const Tensor& grad, double mu) {
  const char* op = "muon_momentum";
  OpCall call = graph_call(op, Signature().tensor(u_out).tensor(buf).tensor(grad), {u_out, buf, grad}, {mu});
  if (!call.launch) return;
  launch_muon_momentum(u_out.as<float>(), buf.as<float>(), grad.as<float>(), grad.numel(), call.scalar(0), stream_);
}

// f32 only, as adamw_update. lr and lr decay are scalar arguments (a recorded optimizer region replays
// with the step's own); the product is formed here in double and rounded once in the kernel.
void CudaBackend::do_muon_update(const Tensor& param, const Tensor& u, double lr, double decay) {
  const char* op = "muon_update";
  OpCall call = graph_call(op, Signature().tensor(param).tensor(u), {param, u}, {lr, lr * decay});
  if (!call.launch) return;
  launch_muon_update(param.as<float>(), u.as<float>(), param.numel(), call.scalar(0), call.scalar(1), stream_);
}

// Newton-Schulz (docs/model.md), in bf16 products with f32 accumulation when the backend's
// matmul_precision is bf16 (or g is bf16), in f32 otherwise. With G [r, c]:
//   r <= c:  X = G / (||G|| + 1e-7);  A = X X^T;  B = b A + c A A;  X = a X + B X
//   r >  c:  the same on G^T, written without transposing memory: with Y = X^T (shape of G),
//            A = Y^T Y;  B = b A + c A A;  Y = a Y + Y B   (A and B are symmetric)
// B = b A + c A A and X = a X + B X are single cuBLASLt calls with separate C input and D output.
void CudaBackend::do_newton_schulz(const Tensor& x_out, const Tensor& g, int steps, double a, double b, double c) {
  const char* op = "newton_schulz";
  OpCall call = graph_call(op, Signature().tensor(x_out).tensor(g).integer(steps).real(a).real(b).real(c), {x_out, g});
  const int64_t rows = g.shape[0], cols = g.shape[1];
  if (!call.launch || rows == 0 || cols == 0) return;
  const bool transposed = rows > cols;
  const int64_t small = std::min(rows, cols);
  const DType work = matmul_bf16_ || g.dtype == DType::bf16 ? DType::bf16 : DType::f32;
  const size_t element = dtype_size(work);
  const size_t matrix_bytes = static_cast<size_t>(rows * cols) * element;
  const size_t gram_bytes = static_cast<size_t>(small * small) * element;
  void* x = scratch("ns_x", matrix_bytes);
  void* x_next = scratch("ns_x_next", matrix_bytes);
  void* gram = scratch("ns_gram", gram_bytes);
  void* poly = scratch("ns_poly", gram_bytes);
  auto* norm = static_cast<double*>(scratch("ns_norm", sizeof(double)));
  auto* partials = static_cast<double*>(scratch("ns_partials", sizeof(double) * reduce_partials_count(g.numel())));
  launch_reduce(norm, false, true, g.data, g.dtype, g.numel(), partials, stream_);
  launch_scale_by_inverse_norm(x, work, g.data, g.dtype, g.numel(), norm, 1e-7, stream_);

  auto product = [&](const void* lhs, int64_t lhs_rows, int64_t lhs_cols, bool t_lhs, const void* rhs, int64_t rhs_rows,
                     int64_t rhs_cols, bool t_rhs, void* out, const void* out_in, double alpha, double beta) {
    GemmCall call_args;
    call_args.a = lhs;
    call_args.b = rhs;
    call_args.c = out;
    call_args.c_in = out_in;
    call_args.a_rows = lhs_rows;
    call_args.a_cols = lhs_cols;
    call_args.b_rows = rhs_rows;
    call_args.b_cols = rhs_cols;
    call_args.transpose_a = t_lhs;
    call_args.transpose_b = t_rhs;
    call_args.operands = work == DType::bf16 ? GemmOperand::bf16 : GemmOperand::f32;
    call_args.c_dtype = work;
    call_args.alpha = alpha;
    call_args.beta = beta;
    gemm_->run(call_args, stream_);
  };
  for (int step = 0; step < steps; ++step) {
    if (!transposed) {
      product(x, rows, cols, false, x, rows, cols, true, gram, nullptr, 1.0, 0.0);          // A = X X^T   [r, r]
      product(gram, small, small, false, gram, small, small, false, poly, gram, c, b);     // B = c A A + b A
      product(poly, small, small, false, x, rows, cols, false, x_next, x, 1.0, a);         // X' = B X + a X
    } else {
      product(x, rows, cols, true, x, rows, cols, false, gram, nullptr, 1.0, 0.0);          // A = Y^T Y   [c, c]
      product(gram, small, small, false, gram, small, small, false, poly, gram, c, b);     // B = c A A + b A
      product(x, rows, cols, false, poly, small, small, false, x_next, x, 1.0, a);         // Y' = Y B + a Y
    }
    std::swap(x, x_next);
  }
  if (work == x_out.dtype) {
    CT_CUDA_CHECK(cudaMemcpyAsync(x_out.data, x, x_out.bytes(), cudaMemcpyDeviceToDevice, stream_));
  } else {
    launch_convert(x_out.data, x_out.dtype, x, work, x_out.numel(), stream_);
  }
}

}  // namespace ct::cuda
