// Softcapped cross-entropy over logits viewed as [N, V] (softcap 0 = no cap).
//   forward:  z = cap tanh(logits / cap);  loss_n = logsumexp(z_n) - z_n[t_n]   (0 where t_n < 0)
//             argmax_n = the first index of max_j z_n[j]
//   backward: dlogits_nj = loss_scale (softmax(z_n)_j - [j == t_n]) (1 - (z_nj / cap)^2)
//             (d z / d logits = 1 - tanh^2), and 0 on rows with t_n < 0.
// Rows are independent: parallel over rows. The backward pass reads a whole row of logits into a
// scratch row of z before writing any of dlogits, so dlogits may alias logits.
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"

namespace ct {

namespace {

// z = cap tanh(l / cap) for one row; returns max_j z_j and its first index.
template <typename T>
T softcap_row(T* z, const T* logits, int64_t vocab, T cap, int32_t* argmax) {
  T max_z = -INFINITY;
  int32_t max_index = 0;
  for (int64_t j = 0; j < vocab; ++j) {
    T value = cap > T(0) ? cap * std::tanh(logits[j] / cap) : logits[j];
    z[j] = value;
    if (value > max_z) {  // strict: the first index wins ties
      max_z = value;
      max_index = static_cast<int32_t>(j);
    }
  }
  if (argmax) *argmax = max_index;
  return max_z;
}

template <typename T>
T sum_exp_shifted(const T* z, int64_t vocab, T shift) {
  T total = 0;
#pragma omp simd reduction(+ : total)
  for (int64_t j = 0; j < vocab; ++j) total += std::exp(z[j] - shift);
  return total;
}

template <typename T>
void cross_entropy_forward_kernel(T* losses, int32_t* argmax, const T* logits, const int32_t* targets, int64_t rows,
                                  int64_t vocab, T cap) {
#pragma omp parallel if (rows * vocab > kMinParallelElements)
  {
    std::vector<T> z(static_cast<size_t>(vocab));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      T max_z = softcap_row(z.data(), logits + n * vocab, vocab, cap, argmax ? argmax + n : nullptr);
      int32_t target = targets[n];
      if (target < 0) {
        losses[n] = 0;
        continue;
      }
      T log_sum_exp = max_z + std::log(sum_exp_shifted(z.data(), vocab, max_z));
      losses[n] = log_sum_exp - z[static_cast<size_t>(target)];
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
        for (int64_t j = 0; j < vocab; ++j) d[j] = 0;
        continue;
      }
      T max_z = softcap_row(z.data(), logits + n * vocab, vocab, cap, static_cast<int32_t*>(nullptr));
      T inv_sum = T(1) / sum_exp_shifted(z.data(), vocab, max_z);
#pragma omp simd
      for (int64_t j = 0; j < vocab; ++j) {
        T probability = std::exp(z[j] - max_z) * inv_sum;
        T dz_dlogit = cap > T(0) ? T(1) - (z[j] / cap) * (z[j] / cap) : T(1);
        d[j] = loss_scale * probability * dz_dlogit;
      }
      T z_target = z[static_cast<size_t>(target)];
      d[target] -= loss_scale * (cap > T(0) ? T(1) - (z_target / cap) * (z_target / cap) : T(1));
    }
  }
}

int64_t check_cross_entropy_args(const char* op, const Tensor& logits, const Tensor& targets, double softcap) {
  check(logits.shape.ndim >= 1, op, ": logits has no dimensions");
  int64_t vocab = logits.shape[logits.shape.ndim - 1];
  check(vocab > 0, op, ": logits has an empty last dimension, shape ", logits.shape.to_string());
  int64_t rows = logits.numel() / vocab;
  check_numel(op, "targets", targets, rows);
  check_token_range(op, "targets", targets, vocab, true);
  check(softcap >= 0 && std::isfinite(softcap), op, ": softcap must be >= 0 (0 = no cap), got ", softcap);
  return rows;
}

}  // namespace

void CpuBackend::softcap_cross_entropy_forward(const Tensor& losses, const Tensor& argmax, const Tensor& logits,
                                               const Tensor& targets, double softcap) {
  const char* op = "softcap_cross_entropy_forward";
  DType dtype = check_float_dtype(op, "logits", logits);
  int64_t rows = check_cross_entropy_args(op, logits, targets, softcap);
  int64_t vocab = logits.shape[logits.shape.ndim - 1];
  check_side_dtype(op, "losses", losses, dtype);
  check_numel(op, "losses", losses, rows);
  if (!argmax.empty()) {
    check_dtype(op, "argmax", argmax, DType::i32);
    check_numel(op, "argmax", argmax, rows);
  }
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    SideValues<T> loss_values(losses);
    cross_entropy_forward_kernel(loss_values.data(), argmax.empty() ? nullptr : argmax.as<int32_t>(), logits.as<T>(),
                                 targets.as<int32_t>(), rows, vocab, static_cast<T>(softcap));
    loss_values.store();
  });
}

void CpuBackend::softcap_cross_entropy_backward(const Tensor& dlogits_out, const Tensor& logits,
                                                const Tensor& targets, double softcap, double loss_scale) {
  const char* op = "softcap_cross_entropy_backward";
  DType dtype = check_float_dtype(op, "logits", logits);
  check_same_dtype(op, "dlogits_out", dlogits_out, "logits", logits);
  check_same_rows(op, "dlogits_out", dlogits_out, "logits", logits);
  int64_t rows = check_cross_entropy_args(op, logits, targets, softcap);
  int64_t vocab = logits.shape[logits.shape.ndim - 1];
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_backward_kernel(dlogits_out.as<T>(), logits.as<T>(), targets.as<int32_t>(), rows, vocab,
                                  static_cast<T>(softcap), static_cast<T>(loss_scale));
  });
}

}  // namespace ct
