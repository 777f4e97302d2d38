// Causal softmax attention, flash style: no T x T matrix is ever stored. Shapes and which keys a
// query sees: attention_layout.h.
//
// Forward, for one query i (s_j = scale q_i . k_j over the visible keys j):
//   lse_i = log sum_j exp(s_j);  out_i = sum_j exp(s_j - lse_i) v_j
// computed over key blocks with an online softmax: keep the running max m, the running sum
// l = sum exp(s - m) and the running acc = sum exp(s - m) v; on a new block with max m',
// rescale l and acc by exp(m - m'). At the end out_i = acc / l and lse_i = m + log l.
//
// Backward, with p_ij = exp(s_ij - lse_i) recomputed from the saved lse and D_i = dout_i . out_i:
//   dv_j += p_ij dout_i
//   dp_ij = dout_i . v_j;   ds_ij = p_ij (dp_ij - D_i)      (softmax backward: sum_j p_ij dp_ij = D_i)
//   dq_i += scale ds_ij k_j;   dk_j += scale ds_ij q_i
//
// Three kernel families compute this. Here, for f64 (the reference precision) and for f32 where the
// tile kernels are not in use: both passes work on [64 queries x 64 keys] tiles whose products
// (Q K^T, P V, P^T dO, dO V^T, dS K, dS^T Q) go through the GEMM library, called from inside the
// parallel region where it runs on the calling thread. f32 on register blocks (AVX2 FMA or
// AVX-512): cpu_attention_f32.cpp. bf16 operands on AMX tiles or AVX512-BF16: cpu_attention_bf16.cpp.
//
// Parallelism: the forward pass runs one task per (batch, head, block of queries); the backward pass
// one task per (batch, kv head), which owns dk and dv of that head and dq of its query heads, so
// every output is written by exactly one task in a fixed order (deterministic, no atomics).
#include <algorithm>
#include <cmath>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_attention_bf16.h"
#include "backend/cpu/cpu_attention_f32.h"
#include "backend/cpu/cpu_backend_impl.h"
#include "backend/cpu/vector_math.h"

namespace ct {

namespace {

constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyBlock = 64;

// Rows are [query block, key block] tiles of scores: row r of `tile` (stride kKeyBlock) holds query
// i_begin + r against keys j_begin ..; `visible` of them are causal-visible, the rest are zeroed.
template <typename T>
void zero_tail(T* row, int64_t visible, int64_t keys) {
  for (int64_t j = std::max<int64_t>(visible, 0); j < keys; ++j) row[j] = 0;
}

template <typename T>
void attention_forward_kernel(T* out, T* lse, const T* q, const T* k, const T* v, const AttentionDims& s, T scale,
                              const GemmLibraries& libraries) {
  const int64_t dim = s.head_dim;
#pragma omp parallel if (s.work() > kMinParallelElements)
  {
    std::vector<T> scores(kQueryBlock * kKeyBlock), acc(static_cast<size_t>(kQueryBlock * dim));
    T running_max[kQueryBlock], running_sum[kQueryBlock];
    for_each_query_block(s, kQueryBlock, [&](const QueryBlock& block) {
      const int64_t b = block.batch, h = block.head, g = block.kv_head;
      const int64_t i_begin = block.first, queries = block.count, key_end = block.key_end;
      const T* q_block = q + s.q_row(b, i_begin, h);
      std::fill(acc.begin(), acc.end(), T(0));
      std::fill(running_max, running_max + kQueryBlock, -INFINITY);
      std::fill(running_sum, running_sum + kQueryBlock, T(0));
      for (int64_t j_begin = 0; j_begin < key_end; j_begin += kKeyBlock) {
        const int64_t keys = std::min(key_end - j_begin, kKeyBlock);
        // scores = scale Q K^T for this tile
        gemm_row_major(libraries, false, true, queries, keys, dim, scale, q_block, s.q_stride(),
                       k + s.kv_row(b, j_begin, g), s.kv_stride(), T(0), scores.data(), kKeyBlock);
        for (int64_t r = 0; r < queries; ++r) {
          T* row = scores.data() + r * kKeyBlock;
          const int64_t visible = std::min(keys, s.visible(i_begin + r) - j_begin);
          zero_tail(row, visible, keys);
          if (visible <= 0) continue;
          const T new_max = std::max(running_max[r], max_of(row, visible));
          const T correction = std::exp(running_max[r] - new_max);  // 0 on the row's first block
          for (int64_t j = 0; j < visible; ++j) row[j] -= new_max;
          exp_in_place(row, visible);  // row = exp(s - m'), the unnormalised probabilities
          running_sum[r] = running_sum[r] * correction + sum_of(row, visible);
          running_max[r] = new_max;
          if (correction != T(1)) {
            T* acc_row = acc.data() + r * dim;
            for (int64_t d = 0; d < dim; ++d) acc_row[d] *= correction;
          }
        }
        // acc += P V
        gemm_row_major(libraries, false, false, queries, dim, keys, T(1), scores.data(), kKeyBlock,
                       v + s.kv_row(b, j_begin, g), s.kv_stride(), T(1), acc.data(), dim);
      }
      for (int64_t r = 0; r < queries; ++r) {
        T* out_row = out + s.q_row(b, i_begin + r, h);
        const T inv_sum = T(1) / running_sum[r];
        for (int64_t d = 0; d < dim; ++d) out_row[d] = acc[static_cast<size_t>(r * dim + d)] * inv_sum;
        lse[s.lse_row(b, h) + i_begin + r] = running_max[r] + std::log(running_sum[r]);
      }
    });
  }
}

template <typename T>
void attention_backward_kernel(T* dq, T* dk, T* dv, const T* dout, const T* out, const T* lse, const T* q,
                               const T* k, const T* v, const AttentionDims& s, T scale,
                               const GemmLibraries& libraries) {
  const int64_t dim = s.head_dim;
#pragma omp parallel if (s.work() > kMinParallelElements)
  {
    std::vector<T> probs(kQueryBlock * kKeyBlock), dscores(kQueryBlock * kKeyBlock);
    std::vector<T> out_dot_dout(static_cast<size_t>(s.query_len));  // D_i
#pragma omp for collapse(2) schedule(dynamic)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t g = 0; g < s.kv_heads; ++g) {
        for (int64_t j = 0; j < s.key_len; ++j) {
          std::fill(dk + s.kv_row(b, j, g), dk + s.kv_row(b, j, g) + dim, T(0));
          std::fill(dv + s.kv_row(b, j, g), dv + s.kv_row(b, j, g) + dim, T(0));
        }
        for (int64_t h = g * s.group(); h < (g + 1) * s.group(); ++h) {
          const T* lse_h = lse + s.lse_row(b, h);
          for (int64_t i = 0; i < s.query_len; ++i) {
            out_dot_dout[static_cast<size_t>(i)] = dot_of(dout + s.q_row(b, i, h), out + s.q_row(b, i, h), dim);
            std::fill(dq + s.q_row(b, i, h), dq + s.q_row(b, i, h) + dim, T(0));
          }
          for (int64_t i_begin = 0; i_begin < s.query_len; i_begin += kQueryBlock) {
            const int64_t queries = std::min(s.query_len - i_begin, kQueryBlock);
            const int64_t key_end = s.key_offset() + i_begin + queries;
            const T* q_block = q + s.q_row(b, i_begin, h);
            const T* dout_block = dout + s.q_row(b, i_begin, h);
            T* dq_block = dq + s.q_row(b, i_begin, h);
            for (int64_t j_begin = 0; j_begin < key_end; j_begin += kKeyBlock) {
              const int64_t keys = std::min(key_end - j_begin, kKeyBlock);
              const int64_t kv = s.kv_row(b, j_begin, g);
              // P = exp(scale Q K^T - lse), zero where masked
              gemm_row_major(libraries, false, true, queries, keys, dim, scale, q_block, s.q_stride(), k + kv,
                             s.kv_stride(), T(0), probs.data(), kKeyBlock);
              for (int64_t r = 0; r < queries; ++r) {
                T* row = probs.data() + r * kKeyBlock;
                const int64_t visible = std::min(keys, s.visible(i_begin + r) - j_begin);
                zero_tail(row, visible, keys);
                if (visible <= 0) continue;
                for (int64_t j = 0; j < visible; ++j) row[j] -= lse_h[i_begin + r];
                exp_in_place(row, visible);
              }
              // dV += P^T dO
              gemm_row_major(libraries, true, false, keys, dim, queries, T(1), probs.data(), kKeyBlock, dout_block,
                             s.q_stride(), T(1), dv + kv, s.kv_stride());
              // dP = dO V^T, then dS = scale P (dP - D)
              gemm_row_major(libraries, false, true, queries, keys, dim, T(1), dout_block, s.q_stride(), v + kv,
                             s.kv_stride(), T(0), dscores.data(), kKeyBlock);
              for (int64_t r = 0; r < queries; ++r) {
                const T d_i = out_dot_dout[static_cast<size_t>(i_begin + r)];
                T* ds = dscores.data() + r * kKeyBlock;
                const T* p = probs.data() + r * kKeyBlock;
                for (int64_t j = 0; j < keys; ++j) ds[j] = scale * p[j] * (ds[j] - d_i);
              }
              // dQ += dS K;  dK += dS^T Q
              gemm_row_major(libraries, false, false, queries, dim, keys, T(1), dscores.data(), kKeyBlock, k + kv,
                             s.kv_stride(), T(1), dq_block, s.q_stride());
              gemm_row_major(libraries, true, false, keys, dim, queries, T(1), dscores.data(), kKeyBlock, q_block,
                             s.q_stride(), T(1), dk + kv, s.kv_stride());
            }
          }
        }
      }
  }
}

// q [B, Tq, H, D] and k [B, Tk, Hkv, D], checked by the contract.
AttentionDims attention_dims(const Tensor& q, const Tensor& k) {
  return {q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]};
}

// f32: the tile kernels (cpu_attention_f32.cpp) where the backend uses them, else the kernels above.
void forward_f32(bool tiles, const GemmLibraries& libraries, float* out, float* lse, const float* q, const float* k,
                 const float* v, const AttentionDims& s, float scale) {
  if (tiles) {
    f32_attention_forward(out, lse, q, k, v, s, scale);
  } else {
    attention_forward_kernel(out, lse, q, k, v, s, scale, libraries);
  }
}

void backward_f32(bool tiles, const GemmLibraries& libraries, float* dq, float* dk, float* dv, const float* dout,
                  const float* out, const float* lse, const float* q, const float* k, const float* v,
                  const AttentionDims& s, float scale) {
  if (tiles) {
    f32_attention_backward(dq, dk, dv, dout, out, lse, q, k, v, s, scale);
  } else {
    attention_backward_kernel(dq, dk, dv, dout, out, lse, q, k, v, s, scale, libraries);
  }
}

// bf16 operands (the model's mixed precision): the bf16 kernels (cpu_attention_bf16.cpp) when they take
// the shape, else the f32 kernels on f32 copies (exact widening; the outputs rounded once).
Buffer f32_copy(Backend& backend, const Tensor& t) {
  Buffer copy(backend, t.shape, DType::f32);
  backend.copy(copy, t);
  return copy;
}

}  // namespace

void CpuBackend::do_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                      const Tensor& v, double scale) {
  const DType dtype = q.dtype == DType::f64 ? DType::f64 : DType::f32;
  const AttentionDims s = attention_dims(q, k);
  if (q.dtype == DType::bf16) {
    if (bf16_attention_supported(s.head_dim)) {
      bf16_attention_forward(out.as<uint16_t>(), lse.as<float>(), q.as<uint16_t>(), k.as<uint16_t>(),
                             v.as<uint16_t>(), s, static_cast<float>(scale));
      return;
    }
    Buffer q32 = f32_copy(*this, q), k32 = f32_copy(*this, k), v32 = f32_copy(*this, v);
    Buffer out32(*this, out.shape, DType::f32);
    forward_f32(f32_attention_tiles_, gemm_libraries_, out32.tensor().as<float>(), lse.as<float>(),
                q32.tensor().as<float>(), k32.tensor().as<float>(), v32.tensor().as<float>(), s,
                static_cast<float>(scale));
    copy(out, out32);
    return;
  }
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    SideValues<T> lse_values(lse);
    if constexpr (std::is_same_v<T, float>) {
      forward_f32(f32_attention_tiles_, gemm_libraries_, out.as<T>(), lse_values.data(), q.as<T>(), k.as<T>(),
                  v.as<T>(), s, static_cast<T>(scale));
    } else {
      attention_forward_kernel(out.as<T>(), lse_values.data(), q.as<T>(), k.as<T>(), v.as<T>(), s,
                               static_cast<T>(scale), gemm_libraries_);
    }
    lse_values.store();
  });
}

void CpuBackend::do_attention_backward(const Tensor& dq_out, const Tensor& dk_out, const Tensor& dv_out,
                                       const Tensor& dout, const Tensor& out, const Tensor& lse, const Tensor& q,
                                       const Tensor& k, const Tensor& v, double scale) {
  const DType dtype = q.dtype == DType::f64 ? DType::f64 : DType::f32;
  const AttentionDims s = attention_dims(q, k);
  // gradients (the contract): the operands' dtype, or f32 or bf16 when the operands are bf16
  if (q.dtype == DType::bf16) {
    if (bf16_attention_supported(s.head_dim)) {
      bf16_attention_backward(dq_out.data, dq_out.dtype == DType::bf16, dk_out.data, dk_out.dtype == DType::bf16,
                             dv_out.data, dv_out.dtype == DType::bf16, dout.as<uint16_t>(), out.as<uint16_t>(),
                             lse.as<float>(), q.as<uint16_t>(), k.as<uint16_t>(), v.as<uint16_t>(), s,
                             static_cast<float>(scale));
      return;
    }
    Buffer q32 = f32_copy(*this, q), k32 = f32_copy(*this, k), v32 = f32_copy(*this, v),
           dout32 = f32_copy(*this, dout), out32 = f32_copy(*this, out);
    Buffer dq32(*this, q.shape, DType::f32), dk32(*this, k.shape, DType::f32), dv32(*this, k.shape, DType::f32);
    backward_f32(f32_attention_tiles_, gemm_libraries_, dq32.tensor().as<float>(), dk32.tensor().as<float>(),
                 dv32.tensor().as<float>(), dout32.tensor().as<float>(), out32.tensor().as<float>(), lse.as<float>(),
                 q32.tensor().as<float>(), k32.tensor().as<float>(), v32.tensor().as<float>(), s,
                 static_cast<float>(scale));
    copy(dq_out, dq32);
    copy(dk_out, dk32);
    copy(dv_out, dv32);
    return;
  }
  dispatch_float(dtype, [&](auto zero) {
    using T = decltype(zero);
    SideValues<T> lse_values(lse);
    lse_values.load();
    if constexpr (std::is_same_v<T, float>) {
      backward_f32(f32_attention_tiles_, gemm_libraries_, dq_out.as<T>(), dk_out.as<T>(), dv_out.as<T>(),
                   dout.as<T>(), out.as<T>(), lse_values.data(), q.as<T>(), k.as<T>(), v.as<T>(), s,
                   static_cast<T>(scale));
    } else {
      attention_backward_kernel(dq_out.as<T>(), dk_out.as<T>(), dv_out.as<T>(), dout.as<T>(), out.as<T>(),
                                lse_values.data(), q.as<T>(), k.as<T>(), v.as<T>(), s, static_cast<T>(scale),
                                gemm_libraries_);
    }
  });
}

}  // namespace ct
