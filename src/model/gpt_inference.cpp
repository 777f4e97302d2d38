// The GPT without a backward pass: evaluation (per-position losses and argmax, or logits) and
// incremental inference against a KV cache. Both reuse one layer's activations for every layer and
// run the layers of gpt.cpp (layer_forward.h).
#include <cmath>
#include <vector>

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

namespace {

// The new tokens sit at positions pos .. pos+Tn-1 of every row; their keys and values join the
// row's cache, and each query attends to every cached key of its row up to itself.
class CachedRows final : public AttentionPositions {
 public:
  CachedRows(KVCache& cache, std::vector<Buffer>& keys, std::vector<Buffer>& values, int64_t B, int64_t Tn)
      : cache_(cache), keys_(keys), values_(values), B_(B), Tn_(Tn) {}
  void attend(Backend& be, const LayerTensors& t, int64_t layer, const Tensor& rope_cos, const Tensor& rope_sin,
              double scale) override {
    const int64_t D = rope_cos.shape[1] * 2, H = t.q.shape[1] / D, Hkv = t.k.shape[1] / D, kv_width = Hkv * D;
    const int64_t pos = cache_.position(), Tk = pos + Tn_, P = cache_.max_positions();
    be.rope_qknorm_forward(t.q.reshaped({B_, Tn_, H, D}), t.rstd_q, t.q_raw.reshaped({B_, Tn_, H, D}), rope_cos,
                           rope_sin, pos, kNormEps);
    be.rope_qknorm_forward(t.k.reshaped({B_, Tn_, Hkv, D}), t.rstd_k, t.k_raw.reshaped({B_, Tn_, Hkv, D}), rope_cos,
                           rope_sin, pos, kNormEps);
    const Buffer& cache_k = keys_[static_cast<size_t>(layer)];
    const Buffer& cache_v = values_[static_cast<size_t>(layer)];
    // Each row's cache is contiguous ([max_positions, Hkv*D]), so rows are attended one at a time.
    for (int64_t b = 0; b < B_; ++b) {
      const Tensor row_k = cache_k.tensor().rows(b, b + 1).reshaped({P, kv_width});
      const Tensor row_v = cache_v.tensor().rows(b, b + 1).reshaped({P, kv_width});
      be.copy(row_k.rows(pos, Tk), t.k.reshaped({B_, Tn_ * kv_width}).rows(b, b + 1).reshaped({Tn_, kv_width}));
      be.copy(row_v.rows(pos, Tk), t.v.reshaped({B_, Tn_ * kv_width}).rows(b, b + 1).reshaped({Tn_, kv_width}));
      be.attention_forward(t.att.reshaped({B_, Tn_, H, D}).rows(b, b + 1), t.lse.reshaped({B_, H, Tn_}).rows(b, b + 1),
                           t.q.reshaped({B_, Tn_, H, D}).rows(b, b + 1), row_k.rows(0, Tk).reshaped({1, Tk, Hkv, D}),
                           row_v.rows(0, Tk).reshaped({1, Tk, Hkv, D}), scale);
    }
  }

 private:
  KVCache& cache_;
  std::vector<Buffer>& keys_;
  std::vector<Buffer>& values_;
  int64_t B_, Tn_;
};

// logits <- cap * tanh(logits / cap), on the host (docs/model.md's softcap).
void softcap_in_place(float* logits, int64_t count, double cap) {
  for (int64_t i = 0; i < count; ++i) logits[i] = static_cast<float>(cap * std::tanh(logits[i] / cap));
}

}  // namespace

void GPT::logits(const int32_t* inputs, int64_t B, int64_t T, float* logits_out) {
  Activations& acts = forward_to_logits(eval_acts_, /*training=*/false, inputs, /*targets=*/nullptr, B, T);
  const int64_t N = B * T, V = config_.vocab_size;
  backend_->download(logits_out, DType::f32, view(acts.logits, {N, V}));
  softcap_in_place(logits_out, N * V, config_.softcap);
}

// Tokens at positions pos .. pos+Tn-1 (cache.position() = pos): the trunk with attention over each
// row's cache (CachedRows), then the head on each row's last new position.
void GPT::forward_incremental(const int32_t* tokens, int64_t B, int64_t Tn, KVCache& cache, float* last_logits_out) {
  const int64_t pos = cache.position_, Tk = pos + Tn;
  check(B == cache.batch_rows_, "GPT::forward_incremental: the cache holds ", cache.batch_rows_, " rows, got ", B);
  check(Tn > 0 && Tk <= cache.max_positions_, "GPT::forward_incremental: ", Tn, " new tokens at position ", pos,
        " exceed the cache's ", cache.max_positions_, " positions");
  const int64_t N = B * Tn, C = config_.n_embd, V = config_.vocab_size;
  if (!eval_acts_) eval_acts_ = std::make_unique<Activations>();
  Activations& acts = *eval_acts_;
  acts.ensure(*backend_, config_, dtype_, matmul_dtype_, dtype_, N, /*per_layer=*/false, /*backward=*/false,
              /*head=*/true);
  ensure_rope_tables(Tk);
  Backend& be = *backend_;
  be.upload(view(acts.tokens, {N}), tokens, DType::i32);
  CachedRows positions(cache, cache.keys_, cache.values_, B, Tn);
  trunk_forward(acts, N, positions);
  // the MLP's normed input is free here (matmul dtype, [N, C] >= [B, C]): gather the last rows into it
  const Tensor last = view(acts.layer(0).ln2, {B, C});
  for (int64_t b = 0; b < B; ++b)
    be.copy(last.rows(b, b + 1), view(acts.xf, {N, C}).rows(b * Tn + Tn - 1, b * Tn + Tn));
  const Tensor logits = view(acts.logits, {B, V});
  head_forward(last, logits);
  be.download(last_logits_out, DType::f32, logits);
  softcap_in_place(last_logits_out, B * V, config_.softcap);
  cache.position_ = Tk;
}

}  // namespace ct
