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
    case ParamInit::zero: return 0.0;
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
