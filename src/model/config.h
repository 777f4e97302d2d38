#pragma once
// The GPT's shape (docs/model.md): every number is a recipe field; this struct holds the resolved values.
// config.json beside a checkpoint is to_json() of this struct.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "util/json.h"

namespace ct {

// rmsnorm's eps: the float32 machine epsilon (2^-23), what nanochat's F.rms_norm uses in fp32.
inline constexpr double kNormEps = static_cast<double>(std::numeric_limits<float>::epsilon());

struct ModelConfig {
  int64_t vocab_size = 8192;     // the tokenizer's vocabulary (special tokens included)
  int64_t vocab_pad_multiple = 64;  // wte and lm_head rows are padded up to a multiple of this
  int64_t sequence_len = 1024;   // training context; rotary tables cover at least this
  int64_t n_layer = 10;
  int64_t n_embd = 640;
  int64_t n_head = 5;
  int64_t n_kv_head = 5;
  int64_t mlp_ratio = 4;         // hidden width of the MLP = mlp_ratio * n_embd
  // attention_layers[i]: layer i carries attention (a layer without it is MLP only). Size n_layer.
  std::vector<bool> attention_layers;
  double softcap = 15.0;         // logits = softcap * tanh(logits / softcap)
  double rope_base = 10000.0;
  // q and k are multiplied by qk_gain after the QK norm (frontier.md 1.6: nanochat's 1.2; 1 is
  // docs/model.md's model).
  double qk_gain = 1.0;
  // Residual scalars (frontier.md 1.1, nanochat's resid_lambdas and x0_lambdas): before layer i the
  // residual stream x becomes r_i x + a_i x0, with x0 the normalised embedding and r, a two learned
  // [n_layer] parameters. Off: docs/model.md's model (r = 1, a = 0, no parameters).
  bool residual_scalars = false;

  int64_t head_dim() const { return n_embd / n_head; }
  // The attention logits' factor: (qk_gain q) . (qk_gain k) / sqrt(D) = qk_gain^2 / sqrt(D) times
  // q . k, so the gain is applied there, once, rather than to q and k (with qk_gain 1 it is
  // exactly 1 / sqrt(D), the baseline's scale).
  double attention_scale() const;
  int64_t mlp_hidden() const { return mlp_ratio * n_embd; }
  // Rows of wte and lm_head: vocab_size rounded up to vocab_pad_multiple. Rows past vocab_size are
  // never read by the loss (the head's output is sliced to vocab_size), so their gradients stay 0.
  int64_t padded_vocab_size() const;
  bool has_attention(int64_t layer) const;
  int64_t attention_layer_count() const;

  // Checks the shape rules; errors name `where` and the field.
  void validate(const std::string& where) const;

  // Parameters, nanochat's way: every weight matrix, wte and lm_head at their padded shapes, and the
  // residual scalars where they are on.
  int64_t parameter_count() const;
  // The parameters a token's matmuls use: parameter_count() less the embedding table wte and the
  // residual scalars (the layers' matrices and lm_head; a lookup does no matmul). nanochat's scaling
  // count N_s (frontier.md 3.2-3.3).
  int64_t matmul_parameter_count() const;
  // Model FLOPs per trained token (forward + backward), as nanochat's estimate_flops counts them:
  //   6 * N + 12 * L_attn * H * D * T,
  // where N = matmul_parameter_count(), and the second term is the attention scores and weighted sum
  // (2 matmuls of T x D per query per head, x3 for forward+backward, averaged over causal positions
  // as nanochat does: it counts the full T, not T/2). L_attn counts only layers with attention.
  double flops_per_token() const;
};

// config.json: nanochat's model_config names (sequence_len, vocab_size, n_layer, n_head,
// n_kv_head, n_embd) plus clocktrain's fields (mlp_ratio, attention_layers, softcap, rope_base,
// vocab_pad_multiple, norm_eps, padded_vocab_size).
// config.json's model_type and architectures (written by to_json, checked where present when read).
inline constexpr const char* kModelType = "clocktrain-gpt";
inline constexpr const char* kModelArchitecture = "ClocktrainGPT";
Json to_json(const ModelConfig& config);
// Reads a config.json object; `where` names the file in errors. Unknown fields are errors.
ModelConfig model_config_from_json(const Json& j, const std::string& where);

}  // namespace ct
