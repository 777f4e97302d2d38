#pragma once
// The GPT's parameters: nanochat's names and shapes ([out, in]), which optimizer group each joins,
// and the seeded initialisation of docs/model.md.
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"

namespace ct {

// Which optimizer takes the parameter (docs/model.md): Muon for the layers' matrices, AdamW for the
// embedding table, the head and the residual scalars (each with its own learning rate).
enum class ParamGroup : uint8_t { matrix, embedding, lm_head, resid_scalars, x0_scalars };

// How the parameter starts (docs/model.md "Initialisation").
enum class ParamInit : uint8_t {
  unit_normal,    // N(0, 1): wte
  zero,           // lm_head and every output projection (attn c_proj, mlp c_proj)
  fan_in_normal,  // N(0, std), std = 1/sqrt(fan_in) * min(1, sqrt(fan_out / fan_in))
  // The residual scalars' per-layer ramps (frontier.md 1.1, nanochat's init at 92d63d4), with
  // s = i / max(n_layer - 1, 1) for layer i: r_i = 1.15 - 0.10 s, a_i = 0.20 - 0.15 s.
  resid_ramp,
  x0_ramp,
};

struct ParameterSpec {
  std::string name;  // e.g. "transformer.h.3.attn.c_q.weight"
  Shape shape;       // [out, in] for matrices, [padded_vocab, n_embd] for wte
  ParamGroup group;
  ParamInit init;
};

// Every parameter in nanochat's state_dict order: resid_lambdas and x0_lambdas (each [n_layer], when the
// config has residual scalars), wte, then per layer c_q, c_k, c_v, c_proj (when the layer has
// attention), mlp c_fc, mlp c_proj, then lm_head.
std::vector<ParameterSpec> parameter_specs(const ModelConfig& config);

// The standard deviation the spec's init rule draws from (0 for zero init and the ramps).
double init_std(const ParameterSpec& spec);

// One parameter's storage on a backend: the value (master weights) and its gradient, same dtype; and,
// for the matrices when the backend takes matmul operands in a lower precision
// (Backend::matmul_operand_dtype()), `compute`: the value rounded to that dtype, which the GPT
// refreshes once per optimizer step (empty otherwise).
struct Parameter {
  ParameterSpec spec;
  Buffer value;
  Buffer grad;
  Buffer compute;
};

// Fills every value from `seed` (init_rng.h's counter-based normals, thread-count independent).
void initialize_parameters(Backend& backend, std::vector<Parameter>& params, uint64_t seed);

}  // namespace ct
