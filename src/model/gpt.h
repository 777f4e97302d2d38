#pragma once
// The GPT of docs/model.md, written once as explicit forward and backward passes over backend ops.
//
// Three ways to run it:
// - training:   loss = forward(inputs, targets, B, T); backward(scale) adds scale * d loss / d params
//               to every parameter's grad (so micro-batches accumulate; zero_grad() starts a step);
// - evaluation: evaluate(...) gives per-position losses (and optionally the argmax token) of a batch
//               without keeping anything for a backward pass;
// - inference:  forward_incremental(...) runs new tokens against a KVCache and returns the softcapped
//               logits of each row's last position, for sampling; logits(...) gives every position's.
// All of them (and SharedPrefixEvaluator's CORE scoring) run the one layer forward of
// layer_forward.h; they differ only in the buffers each layer writes and in AttentionPositions.
//
// Activations are allocated on first use for the largest batch seen and reused by later calls.
// Every tensor (parameters, gradients, activations) has the model's compute dtype: f32 normally,
// f64 for the gradient tests (the CPU backend runs both).
//
// Mixed precision: when the backend asks for matmul operands in a lower precision
// (Backend::matmul_operand_dtype(): bf16 for the CPU and CUDA backends created with
// matmul_precision "bf16", the recipe's backend.matmul_precision) and the model computes in f32,
// every activation that feeds a matmul is stored in that dtype where it is produced (the norms' outputs, q, k, v, the attention output, the MLP's pre-activation and
// activation, and in backward the logits' gradient and the other gradients that feed matmuls), and
// each weight matrix gets a compute copy refreshed once per optimizer step (refresh_compute_weights()).
// The MLP's forward products go through Backend::linear_forward_fp8 (a plain product unless the
// backend was created with fp8 on, which only the CUDA backend supports).
// The residual stream, norms' statistics, losses, weight gradients, master weights and optimizer
// state stay f32; matmuls accumulate in f32.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/layer_forward.h"
#include "model/parameters.h"

namespace ct {

struct Activations;  // model/activations.h
class KVCache;       // below

class GPT {
 public:
  GPT(Backend& backend, const ModelConfig& config, DType dtype = DType::f32);
  ~GPT();
  GPT(const GPT&) = delete;
  GPT& operator=(const GPT&) = delete;

  const ModelConfig& config() const { return config_; }
  Backend& backend() { return *backend_; }
  DType dtype() const { return dtype_; }
  // The dtype of matmul operands: dtype(), or the backend's lower precision (see above).
  DType matmul_dtype() const { return matmul_dtype_; }

  // ---- parameters -------------------------------------------------------------------------------
  // Seeded initialisation of docs/model.md (init_rng.h): same seed, same weights, any thread count.
  void initialize(uint64_t seed);
  // Non-const access may change the weights: it marks the compute copies stale (weights_changed()).
  std::vector<Parameter>& parameters() {
    weights_changed();
    return params_;
  }
  const std::vector<Parameter>& parameters() const { return params_; }
  Parameter& parameter(const std::string& name);  // error naming the parameter when absent
  // The master weights changed (a checkpoint load, a test's edit): the matmul compute copies are
  // refreshed before the next forward pass.
  void weights_changed() { compute_weights_current_ = false; }
  // Rewrites the compute copies from the master weights now (a no-op without copies). The optimizer
  // calls it at the end of every step, so that the copies are made by the same op sequence each step
  // (graph regions, backend.h) and the next forward pass finds them current.
  void refresh_compute_weights();
  int64_t parameter_count() const;
  void zero_grad();

  // ---- training ---------------------------------------------------------------------------------
  // inputs, targets: host arrays of B*T token ids (row-major [B, T]); a negative target is ignored.
  // Returns the mean loss over targets >= 0 (0 when there are none) and keeps what backward needs.
  double forward(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T);
  // The same without waiting for the device: the sum of the losses goes to value slot `loss_slot`
  // (backend.h; added to it when `accumulate`). Returns the number of targets >= 0 (the mean's
  // divisor). This is the training step's form: the trainer reads every slot after one wait, and the
  // whole step can be a graph region.
  int64_t forward_queued(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T, int loss_slot,
                         bool accumulate);
  // grads += loss_scale * d(mean loss of the last forward) / d(params). For gradient accumulation over
  // k micro-batches pass 1/k (nanochat's loss / grad_accum_steps).
  // `ready(first)`, when given, is called as soon as the gradients of parameters()[first..] are
  // final for this pass, in the order backward finishes them (lm_head, the last layer, ..., the first
  // layer, wte: parameters() in reverse): a data-parallel step starts reducing them there, while
  // the rest of the pass runs (train/train_step.h).
  using GradientsReady = std::function<void(size_t first)>;
  void backward(double loss_scale = 1.0, const GradientsReady& ready = {});
  // Per-position losses of the last forward() (host, f32, B*T values; 0 where targets < 0).
  void last_losses(float* out);

  // ---- evaluation -------------------------------------------------------------------------------
  // losses_out: B*T floats, the cross-entropy of each position (0 where target < 0);
  // argmax_out: B*T token ids of the largest softcapped logit (first on ties), or nullptr.
  void evaluate(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T, float* losses_out,
                int32_t* argmax_out = nullptr);
  // logits_out: B*T*vocab_size floats, the softcapped logits of every position (the distribution
  // that evaluate() scores and forward_incremental() samples from).
  void logits(const int32_t* inputs, int64_t B, int64_t T, float* logits_out);

  // ---- inference --------------------------------------------------------------------------------
  // tokens: B*Tn ids (row-major [B, Tn]) at positions cache.position() .. + Tn - 1 of every row.
  // last_logits_out: B * vocab_size floats, the softcapped logits of each row's last new position.
  // Advances cache.position() by Tn.
  void forward_incremental(const int32_t* tokens, int64_t B, int64_t Tn, KVCache& cache, float* last_logits_out);

 private:
  struct LayerParams {
    Parameter* c_q = nullptr;
    Parameter* c_k = nullptr;
    Parameter* c_v = nullptr;
    Parameter* attn_proj = nullptr;
    Parameter* c_fc = nullptr;
    Parameter* mlp_proj = nullptr;
  };

  void ensure_rope_tables(int64_t positions);
  void ensure_compute_weights();  // when stale: refresh_compute_weights()
  void forward_losses(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T);
  // The matmul operand of a weight: its compute copy when there is one, else its value.
  const Tensor& mm(const Parameter* p) const { return p->compute.tensor().empty() ? p->value.tensor() : p->compute.tensor(); }
  // The forward pass, written once for every use (layer_forward.h): the embedding, its norm, every
  // layer and the final norm for the N positions whose tokens are in acts.tokens, leaving the final
  // normed stream in acts.xf; `positions` places the tokens and picks the keys attention sees.
  void trunk_forward(Activations& acts, int64_t N, AttentionPositions& positions);
  void layer_forward(const LayerTensors& t, int64_t layer, AttentionPositions& positions);
  // logits [M, V] = xf_rows [M, C] lm_head[:V]^T.
  void head_forward(const Tensor& xf_rows, const Tensor& logits);
  // The shared start of training, evaluation and logits(): sizes `slot`'s activations (every layer's
  // and the backward buffers when `training`, else one reused layer), uploads the tokens and the
  // targets (when given), runs the trunk (CausalRows) and the head, leaving the logits in the
  // activations.
  Activations& forward_to_logits(std::unique_ptr<Activations>& slot, bool training, const int32_t* inputs,
                                 const int32_t* targets, int64_t B, int64_t T);
  void attention_backward(int64_t layer, int64_t B, int64_t T);
  Tensor residual_gradient_operand(Activations& acts, int64_t N);
  void mlp_backward(int64_t layer, int64_t N);
  // Layer `layer`'s element of a residual-scalar parameter's value or gradient: a one-element view.
  static Tensor layer_scalar(const Buffer& per_layer, int64_t layer);
  Tensor head_weight() const;  // lm_head rows [0, vocab_size), as a matmul operand
  size_t first_parameter_of_layer(int64_t layer) const;  // its index in params_ (state-dict order)

  Backend* backend_;
  ModelConfig config_;
  DType dtype_;
  DType matmul_dtype_;
  bool compute_weights_current_ = false;
  // forward() computes d loss / d logits with the losses (one pass over the logits, the loss scale
  // applied in the head's backward products) unless the backend records graph regions: there the
  // scale must stay a refreshable scalar of softcap_cross_entropy_backward, not a product's alpha.
  bool fused_loss_gradient_ = true;
  std::vector<Parameter> params_;
  std::vector<LayerParams> layers_;
  Parameter* wte_ = nullptr;
  Parameter* lm_head_ = nullptr;
  Parameter* resid_scalars_ = nullptr;  // r [n_layer] and a [n_layer] (config.residual_scalars), else null
  Parameter* x0_scalars_ = nullptr;

  Buffer rope_cos_, rope_sin_;  // [rope_positions_, head_dim/2]
  int64_t rope_positions_ = 0;

  std::unique_ptr<Activations> train_acts_;  // every layer's activations, for backward
  std::unique_ptr<Activations> eval_acts_;   // one layer's worth, reused by every layer
  int64_t last_B_ = 0, last_T_ = 0;
  int64_t last_valid_targets_ = 0;
  bool backward_ready_ = false;

  friend class KVCache;
  friend class SharedPrefixEvaluator;  // model/shared_prefix_eval.h: the trunk over shared prefixes
};

// Keys and values of every attention layer for B rows of up to max_positions tokens.
class KVCache {
 public:
  KVCache(GPT& model, int64_t batch_rows, int64_t max_positions);
  int64_t position() const { return position_; }
  int64_t batch_rows() const { return batch_rows_; }
  int64_t max_positions() const { return max_positions_; }
  void reset() { position_ = 0; }

 private:
  friend class GPT;
  int64_t batch_rows_, max_positions_;
  int64_t position_ = 0;
  std::vector<Buffer> keys_, values_;  // per layer (empty for MLP-only layers): [B, max_positions, Hkv*D]
};

}  // namespace ct
