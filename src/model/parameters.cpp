#include "model/parameters.h"

#include <algorithm>
#include <cmath>

#include "model/init_rng.h"
#include "util/error.h"

namespace ct {

std::vector<ParameterSpec> parameter_specs(const ModelConfig& config) {
  const int64_t C = config.n_embd, V = config.padded_vocab_size(), F = config.mlp_hidden();
  const int64_t q_width = config.n_head * config.head_dim(), kv_width = config.n_kv_head * config.head_dim();
  std::vector<ParameterSpec> specs;
  if (config.residual_scalars) {
    specs.push_back({"resid_lambdas", Shape{config.n_layer}, ParamGroup::resid_scalars, ParamInit::resid_ramp});
    specs.push_back({"x0_lambdas", Shape{config.n_layer}, ParamGroup::x0_scalars, ParamInit::x0_ramp});
  }
  specs.push_back({"transformer.wte.weight", Shape{V, C}, ParamGroup::embedding, ParamInit::unit_normal});
  for (int64_t i = 0; i < config.n_layer; ++i) {
    const std::string prefix = str("transformer.h.", i, ".");
    if (config.has_attention(i)) {
      specs.push_back({prefix + "attn.c_q.weight", Shape{q_width, C}, ParamGroup::matrix, ParamInit::fan_in_normal});
      specs.push_back({prefix + "attn.c_k.weight", Shape{kv_width, C}, ParamGroup::matrix, ParamInit::fan_in_normal});
      specs.push_back({prefix + "attn.c_v.weight", Shape{kv_width, C}, ParamGroup::matrix, ParamInit::fan_in_normal});
      specs.push_back({prefix + "attn.c_proj.weight", Shape{C, q_width}, ParamGroup::matrix, ParamInit::zero});
    }
    specs.push_back({prefix + "mlp.c_fc.weight", Shape{F, C}, ParamGroup::matrix, ParamInit::fan_in_normal});
    specs.push_back({prefix + "mlp.c_proj.weight", Shape{C, F}, ParamGroup::matrix, ParamInit::zero});
  }
  specs.push_back({"lm_head.weight", Shape{V, C}, ParamGroup::lm_head, ParamInit::zero});
  return specs;
}

double init_std(const ParameterSpec& spec) {
  switch (spec.init) {
    case ParamInit::unit_normal: return 1.0;
    case ParamInit::zero:
    case ParamInit::resid_ramp:
    case ParamInit::x0_ramp: return 0.0;
    case ParamInit::fan_in_normal: {
      const double fan_out = static_cast<double>(spec.shape[0]), fan_in = static_cast<double>(spec.shape[1]);
      return 1.0 / std::sqrt(fan_in) * std::min(1.0, std::sqrt(fan_out / fan_in));
    }
  }
  return 0.0;
}

void initialize_parameters(Backend& backend, std::vector<Parameter>& params, uint64_t seed) {
  std::vector<double> host;
  for (Parameter& p : params) {
    const int64_t n = p.spec.shape.numel();
    const double std = init_std(p.spec);
    if (p.spec.init == ParamInit::resid_ramp || p.spec.init == ParamInit::x0_ramp) {
      host.resize(static_cast<size_t>(n));
      const bool resid = p.spec.init == ParamInit::resid_ramp;
      for (int64_t i = 0; i < n; ++i) {
        const double s = static_cast<double>(i) / static_cast<double>(std::max<int64_t>(n - 1, 1));
        host[static_cast<size_t>(i)] = resid ? 1.15 - 0.10 * s : 0.20 - 0.15 * s;
      }
      backend.upload(p.value, host.data(), DType::f64);
      continue;
    }
    if (std == 0.0) {
      backend.fill(p.value, 0.0);
      continue;
    }
    host.resize(static_cast<size_t>(n));
    const uint64_t key = init_stream_key(seed, p.spec.name);
    // Each element depends only on (key, index), so the split across threads cannot change it.
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      host[static_cast<size_t>(i)] = std * counter_normal(key, static_cast<uint64_t>(i));
    backend.upload(p.value, host.data(), DType::f64);
  }
}

}  // namespace ct
