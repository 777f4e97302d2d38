#include "model/config.h"

#include <cmath>
#include <set>

#include "util/error.h"

namespace ct {

int64_t ModelConfig::padded_vocab_size() const {
  int64_t m = vocab_pad_multiple > 0 ? vocab_pad_multiple : 1;
  return (vocab_size + m - 1) / m * m;
}

bool ModelConfig::has_attention(int64_t layer) const {
  if (attention_layers.empty()) return true;
  return attention_layers[static_cast<size_t>(layer)];
}

int64_t ModelConfig::attention_layer_count() const {
  int64_t n = 0;
  for (int64_t i = 0; i < n_layer; ++i) n += has_attention(i) ? 1 : 0;
  return n;
}

void ModelConfig::validate(const std::string& where) const {
  // Upper limits far beyond any model this project trains, so that the parameter count and FLOPs
  // (products of these fields) cannot overflow int64, and a config.json from elsewhere cannot make
  // the model allocate rotary tables of absurd length: with these limits parameter_count() < 2^52.
  auto positive = [&](int64_t v, const char* field, int64_t limit) {
    check(v > 0 && v <= limit, where, ": field '", field, "': expected a positive integer up to ", limit, ", got ", v);
  };
  positive(vocab_size, "vocab_size", int64_t{1} << 24);
  positive(vocab_pad_multiple, "vocab_pad_multiple", int64_t{1} << 16);
  positive(sequence_len, "sequence_len", int64_t{1} << 20);
  positive(n_layer, "n_layer", int64_t{1} << 12);
  positive(n_embd, "n_embd", int64_t{1} << 16);
  positive(n_head, "n_head", int64_t{1} << 16);
  positive(n_kv_head, "n_kv_head", int64_t{1} << 16);
  positive(mlp_ratio, "mlp_ratio", 64);
  check(n_embd % n_head == 0, where, ": field 'n_head': n_embd ", n_embd, " is not divisible by n_head ", n_head);
  check(head_dim() % 2 == 0, where, ": field 'n_head': head_dim ", head_dim(), " must be even (rotary half split)");
  check(n_kv_head <= n_head && n_head % n_kv_head == 0, where, ": field 'n_kv_head': expected a divisor of n_head ",
        n_head, ", got ", n_kv_head);
  check(attention_layers.empty() || static_cast<int64_t>(attention_layers.size()) == n_layer, where,
        ": field 'attention_layers': expected ", n_layer, " entries (one per layer), got ", attention_layers.size());
  check(std::isfinite(softcap) && softcap > 0, where, ": field 'softcap': expected a positive number, got ", softcap);
  check(std::isfinite(rope_base) && rope_base > 1, where, ": field 'rope_base': expected a number > 1, got ",
        rope_base);
  check(std::isfinite(qk_gain) && qk_gain > 0 && qk_gain <= 16, where,
        ": field 'qk_gain': expected a number in (0, 16], got ", qk_gain);
}

double ModelConfig::attention_scale() const {
  return qk_gain * qk_gain / std::sqrt(static_cast<double>(head_dim()));
}

int64_t ModelConfig::parameter_count() const {
  const int64_t C = n_embd, kv = n_kv_head * head_dim();
  int64_t n = 2 * padded_vocab_size() * C;  // wte + lm_head
  if (residual_scalars) n += 2 * n_layer;    // resid_lambdas, x0_lambdas
  for (int64_t i = 0; i < n_layer; ++i) {
    if (has_attention(i)) n += C * C + 2 * kv * C + C * C;  // c_q, c_k, c_v, c_proj
    n += 2 * mlp_hidden() * C;                               // c_fc, c_proj
  }
  return n;
}

int64_t ModelConfig::matmul_parameter_count() const {
  return parameter_count() - padded_vocab_size() * n_embd - (residual_scalars ? 2 * n_layer : 0);
}

double ModelConfig::flops_per_token() const {
  const double non_embedding = static_cast<double>(matmul_parameter_count());
  const double attention = 12.0 * static_cast<double>(attention_layer_count()) * static_cast<double>(n_head) *
                           static_cast<double>(head_dim()) * static_cast<double>(sequence_len);
  return 6.0 * non_embedding + attention;
}

Json to_json(const ModelConfig& c) {
  Json layers = Json::array();
  for (int64_t i = 0; i < c.n_layer; ++i) layers.push_back(c.has_attention(i));
  // model_type and architectures: the keys by which Hugging Face-style loaders recognise a config.json
  // (and refuse one they do not know, rather than misread it); clocktrain's own format stays in format.
  return Json{{"format", "clocktrain-model-config/1"},
              {"model_type", kModelType},
              {"architectures", Json::array({kModelArchitecture})},
              {"vocab_size", c.vocab_size},
              {"padded_vocab_size", c.padded_vocab_size()},
              {"vocab_pad_multiple", c.vocab_pad_multiple},
              {"sequence_len", c.sequence_len},
              {"n_layer", c.n_layer},
              {"n_embd", c.n_embd},
              {"n_head", c.n_head},
              {"n_kv_head", c.n_kv_head},
              {"mlp_ratio", c.mlp_ratio},
              {"attention_layers", layers},
              {"softcap", c.softcap},
              {"rope_base", c.rope_base},
              {"qk_gain", c.qk_gain},
              {"residual_scalars", c.residual_scalars},
              {"norm_eps", kNormEps}};
}

ModelConfig model_config_from_json(const Json& j, const std::string& where) {
  check(j.is_object(), where, ": expected a JSON object");
  static const std::set<std::string> known = {"format",     "model_type", "architectures",    "vocab_size",
                                              "padded_vocab_size", "vocab_pad_multiple", "sequence_len",
                                              "n_layer",    "n_embd",     "n_head",           "n_kv_head",
                                              "mlp_ratio",  "attention_layers", "softcap", "rope_base", "qk_gain",
                                              "residual_scalars", "norm_eps"};
  for (const auto& [key, value] : j.items())
    check(known.count(key) == 1, where, ": unknown field '", key, "'");
  // Absent from configs written before they were added; where present they must be clocktrain's.
  if (j.contains("model_type"))
    check(j["model_type"] == kModelType, where, ": field 'model_type': expected \"", kModelType, "\", got ",
          j["model_type"].dump());
  if (j.contains("architectures"))
    check(j["architectures"] == Json::array({kModelArchitecture}), where, ": field 'architectures': expected [\"",
          kModelArchitecture, "\"], got ", j["architectures"].dump());
  ModelConfig c;
  c.vocab_size = json_field<int64_t>(j, "vocab_size", where);
  c.vocab_pad_multiple = json_field_or<int64_t>(j, "vocab_pad_multiple", 64, where);
  c.sequence_len = json_field<int64_t>(j, "sequence_len", where);
  c.n_layer = json_field<int64_t>(j, "n_layer", where);
  c.n_embd = json_field<int64_t>(j, "n_embd", where);
  c.n_head = json_field<int64_t>(j, "n_head", where);
  c.n_kv_head = json_field_or<int64_t>(j, "n_kv_head", c.n_head, where);
  c.mlp_ratio = json_field_or<int64_t>(j, "mlp_ratio", 4, where);
  c.softcap = json_field_or<double>(j, "softcap", 15.0, where);
  c.rope_base = json_field_or<double>(j, "rope_base", 10000.0, where);
  c.qk_gain = json_field_or<double>(j, "qk_gain", 1.0, where);  // absent from configs written before it
  c.residual_scalars = json_field_or<bool>(j, "residual_scalars", false, where);  // (likewise)
  if (j.contains("attention_layers")) c.attention_layers = json_field<std::vector<bool>>(j, "attention_layers", where);
  if (j.contains("norm_eps")) {
    double eps = json_field<double>(j, "norm_eps", where);
    check(eps == kNormEps, where, ": field 'norm_eps': this build uses ", kNormEps, ", got ", eps);
  }
  c.validate(where);
  if (j.contains("padded_vocab_size")) {
    int64_t padded = json_field<int64_t>(j, "padded_vocab_size", where);
    check(padded == c.padded_vocab_size(), where, ": field 'padded_vocab_size': expected ", c.padded_vocab_size(),
          " from vocab_size and vocab_pad_multiple, got ", padded);
  }
  return c;
}

}  // namespace ct
