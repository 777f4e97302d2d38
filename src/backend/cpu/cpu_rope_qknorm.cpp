// Rotary embedding (half split) followed by RMSNorm over head_dim: the QK norm of docs/model.md.
// For one head vector x of size D at position p, with c_j = cos[p, j], s_j = sin[p, j], j < D/2:
//   forward:  rot_j = x_j c_j + x_{j+D/2} s_j;   rot_{j+D/2} = -x_j s_j + x_{j+D/2} c_j
//             r = 1 / sqrt(mean(rot^2) + eps);   y = rot r
//   backward: drot = r (dy - y mean(dy y))       (RMSNorm backward, see cpu_rmsnorm.cpp)
//             dx = R^T drot:  dx_j = c_j drot_j - s_j drot_{j+D/2};  dx_{j+D/2} = s_j drot_j + c_j drot_{j+D/2}
// Rows (b, t, h) are independent: parallel over them. On the f32 path x, y, dy and dx may each be
// stored in f32 or bf16.
#include <cmath>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/storage.h"

namespace ct {

namespace {

struct RopeShape {
  int64_t batch, time, heads, head_dim;
  int64_t half() const { return head_dim / 2; }
  int64_t rows() const { return batch * time * heads; }
};

// T: compute type; SX, SY, SD: storage of x, y, dy / dx (bf16 allowed on the f32 path).
template <typename T, typename SY, typename SX>
void rope_qknorm_forward_kernel(SY* y, T* rstd, const SX* x, const T* cos, const T* sin, const RopeShape& s,
                                T eps) {
  const int64_t d = s.head_dim, half = s.half();
#pragma omp parallel for schedule(static) if (s.rows() * d > kMinParallelElements)
  for (int64_t row = 0; row < s.rows(); ++row) {
    int64_t t = (row / s.heads) % s.time;  // cos/sin rows are already offset by pos_offset
    const T* c = cos + t * half;
    const T* sn = sin + t * half;
    const SX* xr = x + row * d;
    SY* yr = y + row * d;
    T sum_squares = 0;
#pragma omp simd reduction(+ : sum_squares)
    for (int64_t j = 0; j < half; ++j) {
      T x1 = load_as<T>(xr, j), x2 = load_as<T>(xr, j + half);
      T rot1 = x1 * c[j] + x2 * sn[j];
      T rot2 = -x1 * sn[j] + x2 * c[j];
      sum_squares += rot1 * rot1 + rot2 * rot2;
    }
    T inv_rms = T(1) / std::sqrt(sum_squares / static_cast<T>(d) + eps);
    // the rotation again (cheaper than a round trip of y through bf16 storage), scaled
#pragma omp simd
    for (int64_t j = 0; j < half; ++j) {
      T x1 = load_as<T>(xr, j), x2 = load_as<T>(xr, j + half);
      store_as(yr, j, (x1 * c[j] + x2 * sn[j]) * inv_rms);
      store_as(yr, j + half, (-x1 * sn[j] + x2 * c[j]) * inv_rms);
    }
    rstd[row] = inv_rms;
  }
}

template <typename T, typename SDX, typename SD, typename SY>
void rope_qknorm_backward_kernel(SDX* dx, const SD* dy, const SY* y, const T* rstd, const T* cos, const T* sin,
                                 const RopeShape& s) {
  const int64_t d = s.head_dim, half = s.half();
#pragma omp parallel for schedule(static) if (s.rows() * d > kMinParallelElements)
  for (int64_t row = 0; row < s.rows(); ++row) {
    int64_t t = (row / s.heads) % s.time;
    const T* c = cos + t * half;
    const T* sn = sin + t * half;
    const SD* dyr = dy + row * d;
    const SY* yr = y + row * d;
    SDX* dxr = dx + row * d;
    T dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < d; ++j) dot += load_as<T>(dyr, j) * load_as<T>(yr, j);
    T mean_dot = dot / static_cast<T>(d), inv_rms = rstd[row];
#pragma omp simd
    for (int64_t j = 0; j < half; ++j) {
      T drot1 = inv_rms * (load_as<T>(dyr, j) - load_as<T>(yr, j) * mean_dot);
      T drot2 = inv_rms * (load_as<T>(dyr, j + half) - load_as<T>(yr, j + half) * mean_dot);
      store_as(dxr, j, c[j] * drot1 - sn[j] * drot2);
      store_as(dxr, j + half, sn[j] * drot1 + c[j] * drot2);
    }
  }
}

// The rows pos_offset .. pos_offset + T of a cos or sin table, as T values.
template <typename T>
std::vector<T> table_rows(const Tensor& table, int64_t pos_offset, int64_t time, int64_t half) {
  std::vector<T> rows(static_cast<size_t>(time * half));
  for (int64_t i = 0; i < time * half; ++i) {
    int64_t index = pos_offset * half + i;
    rows[static_cast<size_t>(i)] = table.dtype == DType::f64 ? static_cast<T>(table.as<double>()[index])
                                                             : static_cast<T>(table.as<float>()[index]);
  }
  return rows;
}

// x [B, T, H, D] (y in the backward), checked by the contract.
RopeShape rope_shape(const Tensor& x) { return {x.shape[0], x.shape[1], x.shape[2], x.shape[3]}; }

}  // namespace

void CpuBackend::do_rope_qknorm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& cos,
                                        const Tensor& sin, int64_t pos_offset, double eps) {
  const DType dtype = x.dtype == DType::f64 ? DType::f64 : DType::f32;
  const RopeShape s = rope_shape(x);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> cos_rows = table_rows<T>(cos, pos_offset, s.time, s.half());
    std::vector<T> sin_rows = table_rows<T>(sin, pos_offset, s.time, s.half());
    SideValues<T> inv_rms(rstd);
    if constexpr (std::is_same_v<T, double>) {
      rope_qknorm_forward_kernel(y.as<T>(), inv_rms.data(), x.as<T>(), cos_rows.data(), sin_rows.data(), s,
                                 static_cast<T>(eps));
    } else {
      with_f32_storage(y.dtype, [&](auto sy) {
        with_f32_storage(x.dtype, [&](auto sx) {
          rope_qknorm_forward_kernel(y.as<decltype(sy)>(), inv_rms.data(), x.as<decltype(sx)>(), cos_rows.data(),
                                     sin_rows.data(), s, static_cast<T>(eps));
        });
      });
    }
    inv_rms.store();
  });
}

void CpuBackend::do_rope_qknorm_backward(const Tensor& dx_out, const Tensor& dy, const Tensor& y, const Tensor& rstd,
                                         const Tensor& cos, const Tensor& sin, int64_t pos_offset) {
  const DType dtype = y.dtype == DType::f64 ? DType::f64 : DType::f32;
  const RopeShape s = rope_shape(y);
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> cos_rows = table_rows<T>(cos, pos_offset, s.time, s.half());
    std::vector<T> sin_rows = table_rows<T>(sin, pos_offset, s.time, s.half());
    SideValues<T> inv_rms(rstd);
    inv_rms.load();
    if constexpr (std::is_same_v<T, double>) {
      rope_qknorm_backward_kernel(dx_out.as<T>(), dy.as<T>(), y.as<T>(), inv_rms.data(), cos_rows.data(),
                                  sin_rows.data(), s);
    } else {
      with_f32_storage(dx_out.dtype, [&](auto sdx) {
        with_f32_storage(dy.dtype, [&](auto sd) {
          with_f32_storage(y.dtype, [&](auto sy) {
            rope_qknorm_backward_kernel(dx_out.as<decltype(sdx)>(), dy.as<decltype(sd)>(), y.as<decltype(sy)>(),
                                        inv_rms.data(), cos_rows.data(), sin_rows.data(), s);
          });
        });
      });
    }
  });
}

}  // namespace ct
