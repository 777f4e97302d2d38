#include "backend/cpu/onednn_matmul.h"

#include <dnnl.hpp>
#include <omp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/cpu/amx.h"
#include "backend/cpu/amx_gemm.h"
#include "backend/cpu/dot_gemm.h"
#include "backend/cpu/bf16.h"
#include "backend/cpu/work_array.h"
#include "util/error.h"

namespace ct {

namespace {

using DataType = dnnl::memory::data_type;

struct MatmulKey {
  int64_t m, n, k, lda, ldb, ldc;
  bool transpose_a, transpose_b, c_bf16;
  float beta;
  bool operator==(const MatmulKey& o) const {
    return m == o.m && n == o.n && k == o.k && lda == o.lda && ldb == o.ldb && ldc == o.ldc &&
           transpose_a == o.transpose_a && transpose_b == o.transpose_b && c_bf16 == o.c_bf16 && beta == o.beta;
  }
};

struct MatmulKeyHash {
  size_t operator()(const MatmulKey& key) const {
    size_t h = 0;
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    for (int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc}) mix(std::hash<int64_t>{}(v));
    mix(static_cast<size_t>(key.transpose_a) | static_cast<size_t>(key.transpose_b) << 1 |
        static_cast<size_t>(key.c_bf16) << 2);
    mix(std::hash<float>{}(key.beta));
    return h;
  }
};

struct MatmulEntry {
  dnnl::memory::desc a_md, b_md, c_md, scratchpad_md;
  dnnl::matmul primitive;
};

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// op(X) is [rows, cols]; X is row-major with leading dimension ld, stored [rows, ld] or, when
// transposed, [cols, ld] (op(X)[r][c] = X[c][r]).
dnnl::memory::desc matrix_desc(int64_t rows, int64_t cols, int64_t ld, bool transposed, DataType type) {
  dnnl::memory::dims strides = transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1};
  return dnnl::memory::desc({rows, cols}, type, strides);
}

std::mutex cache_mutex;
std::unordered_map<MatmulKey, std::unique_ptr<MatmulEntry>, MatmulKeyHash>& cache() {
  static std::unordered_map<MatmulKey, std::unique_ptr<MatmulEntry>, MatmulKeyHash> entries;
  return entries;
}

const MatmulEntry& entry_for(const MatmulKey& key) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto found = cache().find(key);
  if (found != cache().end()) return *found->second;
  auto entry = std::make_unique<MatmulEntry>();
  entry->a_md = matrix_desc(key.m, key.k, key.lda, key.transpose_a, DataType::bf16);
  entry->b_md = matrix_desc(key.k, key.n, key.ldb, key.transpose_b, DataType::bf16);
  entry->c_md = matrix_desc(key.m, key.n, key.ldc, false, key.c_bf16 ? DataType::bf16 : DataType::f32);
  dnnl::primitive_attr attr;
  // The caller's thread passes the primitive's scratchpad (run_primitive): with oneDNN's default,
  // one library scratchpad per primitive, two threads running the same primitive at once (Newton-
  // Schulz runs one matrix per thread) would share it and corrupt each other's results.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(key.beta);
    attr.set_post_ops(ops);
  }
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(entry->a_md, entry->b_md, entry->c_md), attr, cpu_engine());
    entry->scratchpad_md = pd.scratchpad_desc();
    entry->primitive = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    fail("gemm: oneDNN cannot build a bf16 matmul for M=", key.m, " N=", key.n, " K=", key.k, ": ", e.what());
  }
  const MatmulEntry& result = *entry;
  cache().emplace(key, std::move(entry));
  return result;
}

MatmulKey make_key(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                   float beta, bool c_bf16, int64_t ldc) {
  return MatmulKey{m, n, k, lda, ldb, ldc, transpose_a, transpose_b, c_bf16, beta};
}

// A scratchpad of at least `bytes` for the calling thread, 64-byte aligned, grown as needed.
void* thread_scratchpad(size_t bytes) {
  thread_local std::vector<unsigned char> storage;
  constexpr size_t kAlign = 64;
  unsigned char* base = work_array(storage, static_cast<int64_t>(bytes + kAlign));
  const auto address = reinterpret_cast<uintptr_t>(base);
  return base + (kAlign - address % kAlign) % kAlign;
}

void run_primitive(const MatmulEntry& entry, const uint16_t* a, const uint16_t* b, void* c) {
  dnnl::engine& engine = cpu_engine();
  thread_local dnnl::stream stream(engine);
  void* scratchpad = thread_scratchpad(entry.scratchpad_md.get_size());
  entry.primitive.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(entry.a_md, engine, const_cast<uint16_t*>(a))},
                                   {DNNL_ARG_WEIGHTS, dnnl::memory(entry.b_md, engine, const_cast<uint16_t*>(b))},
                                   {DNNL_ARG_DST, dnnl::memory(entry.c_md, engine, c)},
                                   {DNNL_ARG_SCRATCHPAD, dnnl::memory(entry.scratchpad_md, engine, scratchpad)}});
  stream.wait();
}

// The dot-product GEMM takes a product only where AMX is not usable: there oneDNN's AMX kernels
// outrun dot products on the products the AMX GEMM declines.
bool dot_gemm_takes(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
  return !amx_usable() && dot_gemm_handles(transpose_a, transpose_b, m, n, k);
}

}  // namespace

std::string bf16_gemm_description() {
  if (amx_gemm_handles(false, false, 32, 32, 32))
    return str("clocktrain's AMX GEMM (K <= ", kAmxGemmMaxK, ") and oneDNN (the rest)");
  if (dot_gemm_takes(false, false, 32, 32, 32))
    return str("clocktrain's AVX512-BF16 GEMM (K <= ", kDotGemmMaxK, ") and oneDNN (the rest)");
  return "oneDNN";
}

void bf16_gemm_row_major(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                         const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, void* c,
                         bool c_bf16, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = beta C (oneDNN wants K > 0)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        if (c_bf16) {
          uint16_t* p = static_cast<uint16_t*>(c) + i * ldc + j;
          *p = beta == 0.0f ? 0 : float_to_bf16(beta * bf16_to_float(*p));
        } else {
          float* p = static_cast<float*>(c) + i * ldc + j;
          *p = beta == 0.0f ? 0.0f : beta * *p;
        }
      }
    return;
  }
  if (amx_gemm_handles(transpose_a, transpose_b, m, n, k)) {
    amx_gemm_bf16(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, c_bf16, ldc);
    return;
  }
  if (dot_gemm_takes(transpose_a, transpose_b, m, n, k)) {
    dot_gemm_bf16(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, c_bf16, ldc);
    return;
  }
  if (alpha == 1.0f) {
    run_primitive(entry_for(make_key(transpose_a, transpose_b, m, n, k, lda, ldb, beta, c_bf16, ldc)), a, b, c);
    return;
  }
  // oneDNN 2.6 runs a matmul with a run-time output scale on its generic gemm:jit kernel, not on AMX
  // (cpu-small's lm_head backward products, the only scaled ones, took ~40% of the bf16 step that
  // way), so alpha is applied here: P = op(A) op(B) on the AMX kernel into f32 scratch, then
  // C = alpha P + beta C in one pass over C (cheap next to the product for the K of a model's GEMMs).
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(m * n)) scratch.resize(static_cast<size_t>(m * n));
  float* product = scratch.data();
  run_primitive(entry_for(make_key(transpose_a, transpose_b, m, n, k, lda, ldb, 0.0f, false, n)), a, b, product);
#pragma omp parallel for schedule(static) if (m * n > (1 << 16) && !omp_in_parallel())
  for (int64_t i = 0; i < m; ++i) {
    const float* p = product + i * n;
    if (c_bf16) {
      uint16_t* row = static_cast<uint16_t*>(c) + i * ldc;
      for (int64_t j = 0; j < n; ++j)
        row[j] = float_to_bf16(beta == 0.0f ? alpha * p[j] : alpha * p[j] + beta * bf16_to_float(row[j]));
    } else {
      float* row = static_cast<float*>(c) + i * ldc;
      for (int64_t j = 0; j < n; ++j) row[j] = beta == 0.0f ? alpha * p[j] : alpha * p[j] + beta * row[j];
    }
  }
}

}  // namespace ct
