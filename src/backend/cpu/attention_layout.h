#pragma once
// Where the CPU attention kernels find a row: q, out [B, Tq, H, D]; k, v [B, Tk, Hkv, D]; lse
// [B, H, Tq]. Query head h reads key/value head h / (H / Hkv) (grouped-query attention). Query i sits
// at absolute position Tk - Tq + i and sees keys 0 .. Tk - Tq + i (Tk > Tq is the KV-cache path of
// inference). Shared by the three kernel families (cpu_attention.cpp, cpu_attention_f32.cpp,
// cpu_attention_bf16.cpp).
#include <algorithm>
#include <cstdint>

namespace ct {

struct AttentionDims {
  int64_t batch, query_len, key_len, heads, kv_heads, head_dim;

  int64_t group() const { return heads / kv_heads; }        // query heads per kv head
  int64_t key_offset() const { return key_len - query_len; }  // absolute position of query 0
  // Element offsets of row (b, t, head) in q/out and in k/v, and of lse[b, h, 0].
  int64_t q_row(int64_t b, int64_t t, int64_t h) const { return ((b * query_len + t) * heads + h) * head_dim; }
  int64_t kv_row(int64_t b, int64_t t, int64_t g) const { return ((b * key_len + t) * kv_heads + g) * head_dim; }
  int64_t lse_row(int64_t b, int64_t h) const { return (b * heads + h) * query_len; }
  int64_t q_stride() const { return heads * head_dim; }  // between positions of one head
  int64_t kv_stride() const { return kv_heads * head_dim; }
  // How many keys query i sees (at least 1 for every query).
  int64_t visible(int64_t i) const { return key_offset() + i + 1; }
  int64_t work() const { return batch * heads * query_len * key_len * head_dim; }  // ~ multiply-adds x 2
};

// Queries first .. first + count - 1 of head `head` (reading kv head `kv_head`) of row `batch`; the
// last of them sees key_end keys.
struct QueryBlock {
  int64_t batch, head, kv_head, first, count, key_end;
};

// fn(QueryBlock) for every block of `block` queries of every (batch, head): the forward passes' tasks,
// shared out among the threads of the enclosing `#pragma omp parallel` region (dynamic schedule: a
// block late in the sequence sees more keys than an early one). Call it from inside such a region.
template <typename Fn>
void for_each_query_block(const AttentionDims& s, int64_t block, Fn&& fn) {
  const int64_t blocks = (s.query_len + block - 1) / block;
#pragma omp for collapse(3) schedule(dynamic)
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < blocks; ++i) {
        const int64_t first = i * block, count = std::min(s.query_len - first, block);
        fn(QueryBlock{b, h, h / s.group(), first, count, s.visible(first + count - 1)});
      }
}

}  // namespace ct
