#pragma once
// The optimizer's and the schedule's fields (docs/model.md "Optimizer" and "Schedule"); every default is
// the baseline's, and every field is a recipe field ([optimizer] and [schedule] in recipes/*.toml).
#include <cstdint>

namespace ct {

struct OptimizerConfig {
  // Muon: every 2-D matrix inside the layers.
  double matrix_lr = 0.02;
  double muon_momentum = 0.95;              // after the warm-up
  double muon_momentum_start = 0.85;        // at step 0, linear to muon_momentum over the warm-up
  int64_t muon_momentum_warmup_steps = 300;
  // 0: the momentum stays muon_momentum after the warm-up (the baseline). Otherwise the momentum at the
  // end of the schedule's lr warmdown, linear from muon_momentum over it (nanochat's 2026 recipe, 0.90
  // from 0.97: frontier.md 2.6).
  double muon_momentum_final = 0.0;
  // Cautious weight decay on the Muon matrices (nanochat's 2026 recipe, frontier.md 2.4; 0 = none, the
  // baseline; nanochat 0.28 at depth 12): lambda_0. Each step, where the update u and the weight p agree
  // in sign (u p >= 0: the step already moves p toward zero), p also loses eta lambda_t p, with eta the
  // matrix's lr of that step and lambda_t = lambda_0 (1 + cos(pi progress)) / 2 (muon_weight_decay_at).
  double muon_weight_decay = 0.0;
  int muon_ns_steps = 5;                    // Newton-Schulz iterations
  double muon_ns_a = 3.4445, muon_ns_b = -4.7750, muon_ns_c = 2.0315;
  // AdamW: the embedding table and the head. Learning rates are multiplied by
  // (n_embd / adamw_lr_reference_width)^-0.5 (tuned at width 768).
  double embedding_lr = 0.2;
  double unembedding_lr = 0.004;
  double adamw_lr_reference_width = 768.0;
  double adam_beta1 = 0.8, adam_beta2 = 0.95, adam_eps = 1e-10;
  double weight_decay = 0.0;
  // Per-group overrides of adam_beta2 and weight_decay for wte (embedding_*) and lm_head (unembedding_*),
  // nanochat's 2026 recipe (frontier.md 2.5: beta2 0.995 and 0.96, weight decay 0.001 and 0.01). A
  // value of -1, the default, takes the shared field.
  double embedding_adam_beta2 = -1.0, unembedding_adam_beta2 = -1.0;
  double embedding_weight_decay = -1.0, unembedding_weight_decay = -1.0;
  // AdamW for the residual scalars (model.residual_scalars; frontier.md 1.1 and 2.5: nanochat's values,
  // tuned at its batch of 2^19 tokens), with no width factor: r (resid_lambdas) at resid_scalar_lr with
  // betas (adam_beta1, adam_beta2) and weight decay resid_scalar_weight_decay; a (x0_lambdas) at
  // x0_scalar_lr with betas (x0_scalar_beta1, adam_beta2) and no weight decay.
  double resid_scalar_lr = 0.005, resid_scalar_weight_decay = 0.05;
  double x0_scalar_lr = 0.5, x0_scalar_beta1 = 0.96;
  // Global gradient-norm clipping before either step (0 disables it).
  double grad_clip = 1.0;
  // Data parallel (docs/parallel.md): each Muon matrix and AdamW parameter is owned by one process,
  // which alone keeps its state and updates it, then broadcasts the new weights (nanochat's
  // distributed Muon). The same weights as unsharded; with one process it changes nothing.
  bool sharded = false;
};

// Learning-rate factor f(progress) for progress in [0, 1]: linear warm-up from 0 over the first
// warmup_fraction, 1 until 1 - warmdown_fraction, then linear to final_lr_fraction at 1.
struct ScheduleConfig {
  double warmup_fraction = 0.0;
  double warmdown_fraction = 0.2;
  double final_lr_fraction = 0.0;
};

}  // namespace ct
