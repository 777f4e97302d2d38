// The GPT without a backward pass: evaluation (per-position losses and argmax) and incremental
// inference against a KV cache. Both reuse one layer's activations for every layer.
#include <cmath>

#include "model/activations.h"
#include "model/gpt.h"
#include "util/error.h"

namespace ct {

void GPT::evaluate(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T, float* losses_out,
                   int32_t* argmax_out) {
  Activations& acts = forward_to_logits(eval_acts_, /*training=*/false, inputs, targets, B, T);
  const int64_t N = B * T, V = config_.vocab_size;
  Backend& be = *backend_;
  const Tensor argmax = argmax_out ? view(acts.argmax, {N}) : Tensor{};
  be.softcap_cross_entropy_forward(view(acts.losses, {N}), argmax, view(acts.logits, {N, V}), view(acts.targets, {N}),
                                   config_.softcap);
  be.download(losses_out, DType::f32, view(acts.losses, {N}));
  if (argmax_out) be.download(argmax_out, DType::i32, argmax);
}

KVCache::KVCache(GPT& model, int64_t batch_rows, int64_t max_positions)
    : batch_rows_(batch_rows), max_positions_(max_positions) {
  const ModelConfig& c = model.config();
  check(batch_rows > 0 && max_positions > 0, "KVCache: expected rows and positions > 0, got ", batch_rows, ", ",
        max_positions);
  const int64_t kv_width = c.n_kv_head * c.head_dim();
  keys_.resize(static_cast<size_t>(c.n_layer));
  values_.resize(static_cast<size_t>(c.n_layer));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    if (!c.has_attention(l)) continue;
    // in the matmul dtype, like the k and v that attention reads in a training forward pass
    keys_[static_cast<size_t>(l)] = Buffer(model.backend(), {batch_rows, max_positions, kv_width}, model.matmul_dtype());
    values_[static_cast<size_t>(l)] =
        Buffer(model.backend(), {batch_rows, max_positions, kv_width}, model.matmul_dtype());
  }
}

// Tokens at positions pos .. pos+Tn-1: the same layers as forward_trunk, except that attention reads
// every cached key and value of its row (rotary offset pos; query i sits at position pos + i).
void GPT::forward_incremental(const int32_t* tokens, int64_t B, int64_t Tn, KVCache& cache, float* last_logits_out) {
  const int64_t pos = cache.position_, Tk = pos + Tn;
  check(B == cache.batch_rows_, "GPT::forward_incremental: the cache holds ", cache.batch_rows_, " rows, got ", B);
  check(Tn > 0 && Tk <= cache.max_positions_, "GPT::forward_incremental: ", Tn, " new tokens at position ", pos,
        " exceed the cache's ", cache.max_positions_, " positions");
  const int64_t N = B * Tn, C = config_.n_embd, H = config_.n_head, Hkv = config_.n_kv_head, D = config_.head_dim();
  const int64_t kv_width = Hkv * D, V = config_.vocab_size;
  if (!eval_acts_) eval_acts_ = std::make_unique<Activations>();
  Activations& acts = *eval_acts_;
  acts.ensure(*backend_, config_, dtype_, matmul_dtype_, dtype_, N, /*per_layer=*/false, /*backward=*/false);
  ensure_compute_weights();
  ensure_rope_tables(Tk);
  Backend& be = *backend_;
  be.upload(view(acts.tokens, {N}), tokens, DType::i32);
  be.embedding_forward(view(acts.embedded, {N, C}), view(acts.tokens, {N}), wte_->value);
  const Tensor x = view(acts.resid, {N, C});
  be.rmsnorm_forward(x, view(acts.rstd0, {N}), view(acts.embedded, {N, C}), kNormEps);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    if (config_.has_attention(l)) {
      LayerActivations& a = acts.layer(l);
      const LayerParams& p = layers_[static_cast<size_t>(l)];
      const Tensor ln1 = view(a.ln1, {N, C});
      be.rmsnorm_forward(ln1, view(a.rstd1, {N}), x, kNormEps);
      be.gemm(ln1, mm(p.c_q), view(acts.q_raw, {N, H * D}), false, true);
      be.gemm(ln1, mm(p.c_k), view(acts.k_raw, {N, kv_width}), false, true);
      be.gemm(ln1, mm(p.c_v), view(a.v, {N, kv_width}), false, true);
      be.rope_qknorm_forward(view(a.q, {B, Tn, H, D}), view(a.rstd_q, {N * H}), view(acts.q_raw, {B, Tn, H, D}),
                             rope_cos_, rope_sin_, pos, kNormEps);
      be.rope_qknorm_forward(view(a.k, {B, Tn, Hkv, D}), view(a.rstd_k, {N * Hkv}), view(acts.k_raw, {B, Tn, Hkv, D}),
                             rope_cos_, rope_sin_, pos, kNormEps);
      const Buffer& cache_k = cache.keys_[static_cast<size_t>(l)];
      const Buffer& cache_v = cache.values_[static_cast<size_t>(l)];
      // Each row's cache is contiguous ([max_positions, Hkv*D]), so rows are attended one at a time.
      for (int64_t b = 0; b < B; ++b) {
        const Tensor row_k = cache_k.tensor().rows(b, b + 1).reshaped({cache.max_positions_, kv_width});
        const Tensor row_v = cache_v.tensor().rows(b, b + 1).reshaped({cache.max_positions_, kv_width});
        be.copy(row_k.rows(pos, Tk), view(a.k, {B, Tn * kv_width}).rows(b, b + 1).reshaped({Tn, kv_width}));
        be.copy(row_v.rows(pos, Tk), view(a.v, {B, Tn * kv_width}).rows(b, b + 1).reshaped({Tn, kv_width}));
        const Tensor q_b = view(a.q, {B, Tn, H, D}).rows(b, b + 1);
        const Tensor out_b = view(a.att, {B, Tn, H, D}).rows(b, b + 1);
        const Tensor lse_b = view(a.lse, {B, H, Tn}).rows(b, b + 1);
        be.attention_forward(out_b, lse_b, q_b, row_k.rows(0, Tk).reshaped({1, Tk, Hkv, D}),
                             row_v.rows(0, Tk).reshaped({1, Tk, Hkv, D}), scale);
      }
      be.gemm(view(a.att, {N, H * D}), mm(p.attn_proj), x, false, true, 1.0, 1.0);
    }
    mlp_forward(acts, l, N);
  }
  be.rmsnorm_forward(view(acts.xf, {N, C}), view(acts.rstd_f, {N}), x, kNormEps);
  // the head on each row's last position only
  // the MLP's normed input is free here (matmul dtype, [N, C] >= [B, C]): gather the last rows into it
  const Tensor last = view(acts.layer(0).ln2, {B, C});
  for (int64_t b = 0; b < B; ++b)
    be.copy(last.rows(b, b + 1), view(acts.xf, {N, C}).rows(b * Tn + Tn - 1, b * Tn + Tn));
  const Tensor logits = view(acts.logits, {B, V});
  be.gemm(last, head_weight(), logits, false, true);
  be.download(last_logits_out, DType::f32, logits);
  const double cap = config_.softcap;
  for (int64_t i = 0; i < B * V; ++i) last_logits_out[i] = static_cast<float>(cap * std::tanh(last_logits_out[i] / cap));
  cache.position_ = Tk;
}

}  // namespace ct
