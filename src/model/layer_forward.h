#pragma once
// One transformer layer's forward pass, written once (GPT::layer_forward in gpt.cpp) for its three
// uses: training (and evaluation), sampling against a KV cache (gpt_inference.cpp) and the scoring of
// sequences that share a prefix (shared_prefix_eval.cpp). What differs between them is named here:
// - which buffers a layer writes: every layer its own (training keeps them for the backward pass) or
//   one set reused by every layer (the uses without a backward pass): the caller's LayerTensors;
// - where the new positions sit and which keys and values each query sees: an AttentionPositions.
#include <cstdint>

#include "backend/backend.h"

namespace ct {

// The tensors one layer reads and writes for N positions (docs/model.md's forward; views, owning
// nothing). Shapes with C = n_embd, H / Hkv heads of D = head_dim, F = the MLP's hidden width;
// [mm] = stored in the matmul operand dtype (gpt.h's mixed precision).
struct LayerTensors {
  Tensor x;             // the residual stream [N, C], updated in place
  // attention branch (unused by MLP-only layers)
  Tensor ln1, rstd1;    // [mm] rmsnorm(x) [N, C], its 1/rms [N]
  Tensor q_raw, k_raw;  // x Wq^T [N, H*D], x Wk^T [N, Hkv*D], before rotary and QK norm
  Tensor q, rstd_q;     // [mm] rotary + QK norm of q_raw [N, H*D], its 1/rms [N*H]
  Tensor k, rstd_k;     // [mm] the same for the keys [N, Hkv*D], [N*Hkv]
  Tensor v;             // [mm] x Wv^T [N, Hkv*D]
  Tensor att, lse;      // [mm] attention output [N, H*D] (heads merged), log-sum-exp [N*H]
  // MLP branch
  Tensor ln2, rstd2;    // [mm] rmsnorm(x) [N, C], [N]
  Tensor fc, act;       // [mm] x W1^T [N, F], relu(fc)^2 [N, F]
};

// The part of the attention branch that depends on the use: from a layer's t.q_raw, t.k_raw and
// t.v, write t.q and t.k (rotary at each position's place in its sequence, then QK norm: backend's
// rope_qknorm_forward) and t.att, t.lse (causal attention of each query over the keys and values its
// sequence has so far: backend's attention_forward, with `scale` = 1/sqrt(D)).
class AttentionPositions {
 public:
  virtual ~AttentionPositions() = default;
  virtual void attend(Backend& backend, const LayerTensors& t, int64_t layer, const Tensor& rope_cos,
                      const Tensor& rope_sin, double scale) = 0;
};

// B rows of T tokens at positions 0..T-1, each query seeing its own row's keys up to itself: the
// training forward pass and evaluation.
class CausalRows final : public AttentionPositions {
 public:
  CausalRows(int64_t B, int64_t T) : B_(B), T_(T) {}
  void attend(Backend& backend, const LayerTensors& t, int64_t layer, const Tensor& rope_cos, const Tensor& rope_sin,
              double scale) override;

 private:
  int64_t B_, T_;
};

}  // namespace ct
