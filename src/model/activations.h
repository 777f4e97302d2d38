#pragma once
// The GPT's activation buffers, sized for a capacity of N token positions and reused across calls
// (and across training steps: nothing is allocated once the largest batch has been seen); each call
// views the first B*T positions (prefix views, see view()).
//
// Two dtypes: `dtype` (the model's compute dtype) and `mm` (the matmul operand dtype, gpt.h). Buffers
// marked [mm] below feed matmuls and are stored in mm; with mm == dtype the extra [mm-only] buffers
// are not allocated and their accessors return the buffer they stand in for.
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/layer_forward.h"

namespace ct {

// What one layer keeps from forward for backward (docs/model.md's forward, shapes for N positions):
struct LayerActivations {
  // attention branch (left empty for MLP-only layers)
  Buffer ln1, rstd1;     // [mm] rmsnorm(x) [N, C], its 1/rms [N]
  Buffer q, rstd_q;      // [mm] rope + QK-norm of x Wq^T: [N, H*D], [N*H]
  Buffer k, rstd_k;      // [mm] same for keys: [N, Hkv*D], [N*Hkv]
  Buffer v;              // [mm] x Wv^T [N, Hkv*D]
  Buffer att, lse;       // [mm] attention output [N, H*D] (heads merged), log-sum-exp [N*H] (viewed [B, H, T])
  // MLP branch
  Buffer ln2, rstd2;     // [mm] rmsnorm(x) [N, C], [N]
  Buffer fc;             // [mm] x W1^T [N, F] (pre-activation)
  Buffer act;            // [mm] relu(fc)^2 [N, F]; backward overwrites it with d fc once it is spent
  // residual scalars (training with config.residual_scalars only)
  Buffer x_in;           // the residual stream entering the layer, before the mix r x + a x0 [N, C]
};

struct Activations {
  int64_t capacity = 0;  // token positions
  bool with_backward = false;
  bool with_head = false;
  ModelConfig config;  // the shapes the buffers were made for
  DType mm_dtype = DType::f32;
  DType logits_dtype = DType::f32;

  Buffer tokens, targets;   // i32 [N]
  Buffer embedded;          // wte[tokens] [N, C]; backward reuses it for d(embedded)
  Buffer resid0, rstd0;     // the first rmsnorm's output x0 [N, C] (kept for backward and the residual
                            // scalars only) and [N]
  Buffer resid;             // the residual stream [N, C], updated in place layer by layer
  std::vector<LayerActivations> layers;  // n_layer entries for training, 1 for evaluation
  Buffer xf, rstd_f;        // [mm] final rmsnorm [N, C], [N]
  Buffer logits;            // [N, V] in logits_dtype; when that is mm, training turns it into d logits in place
  Buffer losses;            // [N]
  Buffer argmax;            // i32 [N] (evaluation only)
  // (targets, logits, losses and argmax are left empty when the caller runs the head itself: `head`)
  Buffer q_raw, k_raw;      // x Wq^T, x Wk^T before rope: scratch shared by every layer
  // backward scratch (with_backward only)
  Buffer d_resid;           // d loss / d residual stream [N, C]
  Buffer d_width;           // [N, C]: d of a norm's output or of the merged attention output
  Buffer d_hidden;          // [mm] [N, F]: d of the MLP's activation
  Buffer dq, dk, dv;        // [N, H*D], [N, Hkv*D], [mm] [N, Hkv*D]
  Buffer d_x0;              // d loss / d x0 through the residual scalars' a terms [N, C] (with them only)
  // [mm-only] backward scratch: gradients that feed matmuls, rounded where they are produced
  Buffer dlogits_mm;        // [N, V] d logits, when the logits are not in mm (else: logits, in place)
  Buffer d_resid_mm;        // [N, C] a rounded copy of d_resid for a branch's first matmuls
  Buffer d_att_mm;          // [N, H*D] d of the merged attention output (else: d_width)
  Buffer dq_raw_mm, dk_raw_mm;  // d of x Wq^T, x Wk^T (else: q_raw, k_raw, free by then)

  LayerActivations& layer(int64_t i) { return layers[layers.size() == 1 ? 0 : static_cast<size_t>(i)]; }
  // Layer i's tensors for the first N positions (GPT::layer_forward's view of them).
  LayerTensors layer_tensors(int64_t i, int64_t N);
  const Buffer& dlogits() const { return dlogits_mm.tensor().empty() ? logits : dlogits_mm; }
  const Buffer& d_attention() const { return d_att_mm.tensor().empty() ? d_width : d_att_mm; }
  const Buffer& dq_raw() const { return dq_raw_mm.tensor().empty() ? q_raw : dq_raw_mm; }
  const Buffer& dk_raw() const { return dk_raw_mm.tensor().empty() ? k_raw : dk_raw_mm; }

  // (Re)allocates for at least `positions` token positions when the capacity is smaller.
  // per_layer: one LayerActivations per layer (training) or a single shared one (evaluation).
  // logits: dtype, or mm (a training step whose fused cross-entropy writes d logits over them).
  // head: the per-position head buffers (targets, logits, losses, argmax) too.
  void ensure(Backend& backend, const ModelConfig& config, DType dtype, DType mm, DType logits, int64_t positions,
              bool per_layer, bool backward, bool head);
};

// The first shape.numel() elements of a buffer, seen with `shape` (checked against the capacity).
Tensor view(const Buffer& buffer, Shape shape);

}  // namespace ct
