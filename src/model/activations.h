#pragma once
// The GPT's activation buffers, sized for a capacity of N token positions and reused across calls;
// each call views the first B*T positions (prefix views, see view()).
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"

namespace ct {

// What one layer keeps from forward for backward (model.md's forward, shapes for N positions):
struct LayerActivations {
  // attention branch (left empty for MLP-only layers)
  Buffer ln1, rstd1;     // rmsnorm(x) [N, C], its 1/rms [N]
  Buffer q, rstd_q;      // rope + QK-norm of x Wq^T: [N, H*D], [N*H]
  Buffer k, rstd_k;      // same for keys: [N, Hkv*D], [N*Hkv]
  Buffer v;              // x Wv^T [N, Hkv*D]
  Buffer att, lse;       // attention output [N, H*D] (heads merged), log-sum-exp [N*H] (viewed [B, H, T])
  // MLP branch
  Buffer ln2, rstd2;     // rmsnorm(x) [N, C], [N]
  Buffer fc;             // x W1^T [N, F] (pre-activation)
  Buffer act;            // relu(fc)^2 [N, F]; backward overwrites it with d fc once it is spent
};

struct Activations {
  int64_t capacity = 0;  // token positions
  bool with_backward = false;

  Buffer tokens, targets;   // i32 [N]
  Buffer embedded;          // wte[tokens] [N, C]; backward reuses it for d(embedded)
  Buffer resid0, rstd0;     // the first rmsnorm's output [N, C] and [N]
  Buffer resid;             // the residual stream [N, C], updated in place layer by layer
  std::vector<LayerActivations> layers;  // n_layer entries for training, 1 for evaluation
  Buffer xf, rstd_f;        // final rmsnorm [N, C], [N]
  Buffer logits;            // [N, V] (f32 when the model computes in bf16); backward turns it into d logits in place
  Buffer dlogits;           // [N, V] bf16 d logits for the bf16 products (bf16 models only; f32/f64 use logits)
  Buffer losses;            // [N]
  Buffer argmax;            // i32 [N] (evaluation only)
  Buffer q_raw, k_raw;      // x Wq^T, x Wk^T before rope: scratch shared by every layer
  // backward scratch (with_backward only)
  Buffer d_resid;           // d loss / d residual stream [N, C]
  Buffer d_width;           // [N, C]: d of a norm's output or of the merged attention output
  Buffer d_hidden;          // [N, F]: d of the MLP's activation
  Buffer dq, dk, dv;        // [N, H*D], [N, Hkv*D], [N, Hkv*D]

  LayerActivations& layer(int64_t i) { return layers[layers.size() == 1 ? 0 : static_cast<size_t>(i)]; }

  // (Re)allocates for at least `positions` token positions when the capacity is smaller.
  // per_layer: one LayerActivations per layer (training) or a single shared one (evaluation).
  // dtype is the model's compute dtype; with bf16 the per-row side values (rstd, lse, losses) and the
  // logits are f32 (side_dtype below).
  void ensure(Backend& backend, const ModelConfig& config, DType dtype, int64_t positions, bool per_layer,
              bool backward);
};

// The dtype of the per-row side values (rstd, lse, losses, rotary tables) and the logits for a compute
// dtype: f32 under bf16 (the backends keep them in f32), the compute dtype otherwise.
inline DType side_dtype(DType compute) { return compute == DType::bf16 ? DType::f32 : compute; }

// The first shape.numel() elements of a buffer, seen with `shape` (checked against the capacity).
Tensor view(const Buffer& buffer, Shape shape);

}  // namespace ct
