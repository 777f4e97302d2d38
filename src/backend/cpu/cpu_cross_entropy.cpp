// Softcapped cross-entropy over logits viewed as [N, V] (softcap 0 = no cap).
//   forward:  z = cap tanh(logits / cap);  loss_n = logsumexp(z_n) - z_n[t_n]   (0 where t_n < 0)
//             argmax_n = the first index of max_j z_n[j]
//   backward: dlogits_nj = loss_scale (softmax(z_n)_j - [j == t_n]) (1 - (z_nj / cap)^2)
//             (d z / d logits = 1 - tanh^2), and 0 on rows with t_n < 0.
//   fused:    both at once (training needs both for every batch): one read of the logits.
// Rows are independent: parallel over rows. The backward pass reads a whole row of logits into a
// scratch row of z before writing any of dlogits, so dlogits may alias logits.
//
// The fused pass on f32 with a cap (cpu_cross_entropy_fast.cpp, AVX2 or AVX-512) uses that |z| <= cap: it
// shifts the exponentials by cap instead of by the row's maximum (exp(z - cap) lies in [e^-2cap, 1],
// far from f32's limits for the caps in use), so one pass over the row gives both tanh and the sum.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/convert.h"
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/cpu_cross_entropy_fast.h"
#include "backend/cpu/storage.h"
#include "backend/cpu/vector_math.h"

namespace ct {

namespace {

// z = cap tanh(l / cap) for one row (z = l without a cap); returns max_j z_j.
template <typename T>
T softcap_row(T* z, const T* logits, int64_t vocab, T cap) {
  if (cap > T(0)) {
    const T inv_cap = T(1) / cap;  // l / cap as l * (1 / cap): within an ulp, and no division per element
    for (int64_t j = 0; j < vocab; ++j) z[j] = logits[j] * inv_cap;
    tanh_in_place(z, vocab);
    for (int64_t j = 0; j < vocab; ++j) z[j] *= cap;
  } else {
    std::copy(logits, logits + vocab, z);
  }
  return max_of(z, vocab);
}

// e = exp(z - shift), e may be z itself; returns sum_j e_j (accumulated in double).
template <typename T>
T exp_shifted(T* e, const T* z, int64_t vocab, T shift) {
  for (int64_t j = 0; j < vocab; ++j) e[j] = z[j] - shift;
  exp_in_place(e, vocab);
  double total = 0;
#pragma omp simd reduction(+ : total)
  for (int64_t j = 0; j < vocab; ++j) total += static_cast<double>(e[j]);
  return static_cast<T>(total);
}

// loss = logsumexp(z) - z[target] with logsumexp = max_z + log(sum_j exp(z_j - max_z)): one expression
// for the forward and the fused kernels, so that the training loss and the evaluation loss of the same
// logits are the same bits on this path too.
template <typename T>
T row_loss(T max_z, T sum_exp, T z_target) {
  return (max_z + std::log(sum_exp)) - z_target;
}

// Each thread keeps one scratch row of z (32 KiB for vocab 8192 in f32, so that the row's passes
// stay in L1/L2); the forward pass turns it into exp(z - max) in place, the backward pass writes
// the probabilities straight into the output row.
template <typename T>
void cross_entropy_forward_kernel(T* losses, int32_t* argmax, const T* logits, const int32_t* targets, int64_t rows,
                                  int64_t vocab, T cap) {
#pragma omp parallel if (rows * vocab > kMinParallelElements)
  {
    std::vector<T> z(static_cast<size_t>(vocab));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      T max_z = softcap_row(z.data(), logits + n * vocab, vocab, cap);
      if (argmax) argmax[n] = static_cast<int32_t>(std::find(z.begin(), z.end(), max_z) - z.begin());  // first
      int32_t target = targets[n];
      if (target < 0) {
        losses[n] = 0;
        continue;
      }
      const T z_target = z[static_cast<size_t>(target)];
      losses[n] = row_loss(max_z, exp_shifted(z.data(), z.data(), vocab, max_z), z_target);
    }
  }
}

template <typename T>
void cross_entropy_backward_kernel(T* dlogits, const T* logits, const int32_t* targets, int64_t rows, int64_t vocab,
                                   T cap, T loss_scale) {
#pragma omp parallel if (rows * vocab > kMinParallelElements)
  {
    std::vector<T> z(static_cast<size_t>(vocab));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      T* d = dlogits + n * vocab;
      int32_t target = targets[n];
      if (target < 0) {
        std::fill(d, d + vocab, T(0));
        continue;
      }
      T max_z = softcap_row(z.data(), logits + n * vocab, vocab, cap);  // reads the whole row before d is written
      T inv_sum = T(1) / exp_shifted(d, z.data(), vocab, max_z);
      // d loss / d z_j = softmax_j - [j == t];  d z_j / d logit_j = 1 - (z_j / cap)^2
      const T inv_cap = cap > T(0) ? T(1) / cap : T(0);
#pragma omp simd
      for (int64_t j = 0; j < vocab; ++j) {
        T dz_dlogit = T(1) - (z[j] * inv_cap) * (z[j] * inv_cap);
        d[j] = loss_scale * d[j] * inv_sum * dz_dlogit;
      }
      const T z_target = z[static_cast<size_t>(target)];
      d[target] -= loss_scale * (T(1) - (z_target * inv_cap) * (z_target * inv_cap));
    }
  }
}

// Losses and dlogits in one pass per row (the generic version: any T, any dlogits storage, any cap).
template <typename T, typename SD>
void cross_entropy_fused_kernel(T* losses, SD* dlogits, const T* logits, const int32_t* targets, int64_t rows,
                                int64_t vocab, T cap, T loss_scale) {
#pragma omp parallel if (rows * vocab > kMinParallelElements)
  {
    std::vector<T> z(static_cast<size_t>(vocab)), e(static_cast<size_t>(vocab));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      SD* d = dlogits + n * vocab;
      const int32_t target = targets[n];
      if (target < 0) {
        losses[n] = 0;
        for (int64_t j = 0; j < vocab; ++j) store_as(d, j, T(0));
        continue;
      }
      const T max_z = softcap_row(z.data(), logits + n * vocab, vocab, cap);  // the whole row is read here
      const T sum_exp = exp_shifted(e.data(), z.data(), vocab, max_z);
      const T inv_sum = T(1) / sum_exp;
      losses[n] = row_loss(max_z, sum_exp, z[static_cast<size_t>(target)]);
      const T inv_cap = cap > T(0) ? T(1) / cap : T(0);
#pragma omp simd
      for (int64_t j = 0; j < vocab; ++j) {
        const T dz_dlogit = T(1) - (z[j] * inv_cap) * (z[j] * inv_cap);
        const T hit = j == target ? T(1) : T(0);
        store_as(d, j, loss_scale * (e[j] * inv_sum - hit) * dz_dlogit);
      }
    }
  }
}

// f32 with a cap takes the SIMD kernel (cpu_cross_entropy_fast.cpp) at the avx2 level and above.
bool use_fast_path(double softcap) {
  return softcap > 0 && softcap <= kFastCrossEntropyMaxCap && fast_cross_entropy_available();
}

// The rows of the logits, once the targets' ids (read here, on the host) are in [-inf, vocab).
int64_t checked_rows(const char* op, const Tensor& logits, const Tensor& targets) {
  const RowShape s = rows_of(logits);
  check_token_range(op, "targets", targets, s.width, true);
  return s.rows;
}

}  // namespace

void CpuBackend::do_softcap_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                                  const Tensor& targets, double softcap) {
  const DType dtype = logits.dtype;  // f32 or f64 (check_kernel_dtype)
  int64_t rows = checked_rows("softcap_cross_entropy_forward", logits, targets);
  int64_t vocab = logits.shape[logits.shape.ndim - 1];
  if (dtype == DType::f32 && use_fast_path(softcap)) {
    fast_softcap_cross_entropy(losses.as<float>(), argmax.empty() ? nullptr : argmax.as<int32_t>(), nullptr, false,
                               logits.data, false, targets.as<int32_t>(), rows, vocab, static_cast<float>(softcap),
                               1.0f);
    return;
  }
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    SideValues<T> loss_values(losses);
    cross_entropy_forward_kernel(loss_values.data(), argmax.empty() ? nullptr : argmax.as<int32_t>(), logits.as<T>(),
                                 targets.as<int32_t>(), rows, vocab, static_cast<T>(softcap));
    loss_values.store();
  });
}

void CpuBackend::do_softcap_cross_entropy_backward(const Tensor& dlogits_out, const Tensor& logits,
                                                   const Tensor& targets, double softcap, double loss_scale) {
  const char* op = "softcap_cross_entropy_backward";
  const DType dtype = logits.dtype;  // f32 or f64 (check_kernel_dtype)
  check_same_dtype(op, "dlogits_out", dlogits_out, "logits", logits);  // this kernel writes the logits' dtype
  int64_t rows = checked_rows(op, logits, targets);
  int64_t vocab = logits.shape[logits.shape.ndim - 1];
  if (dtype == DType::f32 && use_fast_path(softcap)) {
    std::vector<float> unused_losses(static_cast<size_t>(rows));
    fast_softcap_cross_entropy(unused_losses.data(), nullptr, dlogits_out.data, false, logits.data, false,
                               targets.as<int32_t>(), rows, vocab, static_cast<float>(softcap),
                               static_cast<float>(loss_scale));
    return;
  }
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_backward_kernel(dlogits_out.as<T>(), logits.as<T>(), targets.as<int32_t>(), rows, vocab,
                                  static_cast<T>(softcap), static_cast<T>(loss_scale));
  });
}

void CpuBackend::do_softcap_cross_entropy_fused(const Tensor& losses, const Tensor& dlogits_out, const Tensor& logits,
                                                const Tensor& targets, double softcap, double loss_scale) {
  const char* op = "softcap_cross_entropy_fused";
  const DType dtype = logits.dtype == DType::f64 ? DType::f64 : DType::f32;  // f32 for f32 or bf16 logits
  int64_t rows = checked_rows(op, logits, targets);
  int64_t vocab = logits.shape[logits.shape.ndim - 1];
  if (dtype == DType::f64) {
    SideValues<double> loss_values(losses);
    cross_entropy_fused_kernel(loss_values.data(), dlogits_out.as<double>(), logits.as<double>(),
                               targets.as<int32_t>(), rows, vocab, softcap, loss_scale);
    loss_values.store();
    return;
  }
  const bool bf16_logits = logits.dtype == DType::bf16;
  if (use_fast_path(softcap)) {
    fast_softcap_cross_entropy(losses.as<float>(), nullptr, dlogits_out.data, dlogits_out.dtype == DType::bf16,
                               logits.data, bf16_logits, targets.as<int32_t>(), rows, vocab,
                               static_cast<float>(softcap), static_cast<float>(loss_scale));
    return;
  }
  // the portable kernel reads f32: bf16 logits are widened first (exactly)
  std::vector<float> widened;
  if (bf16_logits) {
    widened.resize(static_cast<size_t>(logits.numel()));
    convert_elements(op, widened.data(), DType::f32, logits.data, DType::bf16, logits.numel());
  }
  const float* logits_f32 = bf16_logits ? widened.data() : logits.as<float>();
  with_f32_storage(dlogits_out.dtype, [&](auto sd) {
    cross_entropy_fused_kernel(losses.as<float>(), dlogits_out.as<decltype(sd)>(), logits_f32,
                               targets.as<int32_t>(), rows, vocab, static_cast<float>(softcap),
                               static_cast<float>(loss_scale));
  });
}

}  // namespace ct
