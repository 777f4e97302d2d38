#include "train/recipe.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <vector>
#include <toml++/toml.h>

#include "util/enum_names.h"
#include "util/error.h"
#include "util/threads.h"
#include "util/files.h"
#include "util/sha256.h"

namespace ct {

namespace {

// One field of a TOML table: how to read a node into the recipe.
using FieldReader = std::function<void(const toml::node&, const std::string& what)>;

std::string where_of(const std::string& file, const toml::node& node, const std::string& field) {
  const auto line = node.source().begin.line;
  return line > 0 ? str(file, ":", line, ": field '", field, "'") : str(file, ": field '", field, "'");
}

FieldReader int_field(int64_t& target) {
  return [&target](const toml::node& n, const std::string& what) {
    auto v = n.value_exact<int64_t>();
    check(v.has_value(), what, ": expected an integer");
    target = *v;
  };
}
FieldReader seed_field(uint64_t& target) {
  return [&target](const toml::node& n, const std::string& what) {
    auto v = n.value_exact<int64_t>();
    check(v.has_value() && *v >= 0, what, ": expected a non-negative integer");
    target = static_cast<uint64_t>(*v);
  };
}
FieldReader small_int_field(int& target) {
  return [&target](const toml::node& n, const std::string& what) {
    auto v = n.value_exact<int64_t>();
    check(v.has_value() && *v >= -1000000 && *v <= 1000000, what, ": expected an integer");
    target = static_cast<int>(*v);
  };
}
FieldReader number_field(double& target) {
  return [&target](const toml::node& n, const std::string& what) {
    if (auto i = n.value_exact<int64_t>()) {
      target = static_cast<double>(*i);
      return;
    }
    auto v = n.value_exact<double>();
    check(v.has_value(), what, ": expected a number");
    target = *v;
  };
}
FieldReader bool_field(bool& target) {
  return [&target](const toml::node& n, const std::string& what) {
    auto v = n.value_exact<bool>();
    check(v.has_value(), what, ": expected true or false");
    target = *v;
  };
}
FieldReader string_field(std::string& target) {
  return [&target](const toml::node& n, const std::string& what) {
    auto v = n.value_exact<std::string>();
    check(v.has_value(), what, ": expected a string");
    target = *v;
  };
}

// A string naming one of an enum's values (name_of gives each value's name).
template <typename Enum>
FieldReader enum_field(Enum& target, std::vector<Enum> values, const char* (*name_of)(Enum)) {
  return [&target, values, name_of](const toml::node& n, const std::string& what) {
    auto v = n.value_exact<std::string>();
    check(v.has_value(), what, ": expected a string: ", enum_choices(values, name_of));
    target = parse_enum(values, name_of, *v, what);
  };
}

// A string that one of the backend's parse functions reads (parse_matmul_precision,
// parse_attention_kernels: backend.h), so the recipe and the command-line options accept the same
// names; `choices` lists them for a value that is not a string.
template <typename Enum>
FieldReader parsed_field(Enum& target, Enum (*parse)(const std::string& text, const std::string& where),
                         std::string (*choices)()) {
  return [&target, parse, choices](const toml::node& n, const std::string& what) {
    auto v = n.value_exact<std::string>();
    check(v.has_value(), what, ": expected a string: ", choices());
    target = parse(*v, what);
  };
}

// attention_layers = "all" or one boolean per layer.
FieldReader attention_layers_field(std::vector<bool>& target) {
  return [&target](const toml::node& n, const std::string& what) {
    if (auto s = n.value_exact<std::string>()) {
      check(*s == "all", what, ": expected \"all\" or an array of booleans, got \"", *s, "\"");
      target.clear();
      return;
    }
    const toml::array* a = n.as_array();
    check(a != nullptr, what, ": expected \"all\" or an array of booleans (one per layer)");
    target.clear();
    for (const toml::node& e : *a) {
      auto b = e.value_exact<bool>();
      check(b.has_value(), what, ": expected booleans in the array");
      target.push_back(*b);
    }
  };
}

FieldReader ns_coefficients_field(OptimizerConfig& o) {
  return [&o](const toml::node& n, const std::string& what) {
    const toml::array* a = n.as_array();
    check(a != nullptr && a->size() == 3, what, ": expected 3 numbers [a, b, c]");
    double* targets[3] = {&o.muon_ns_a, &o.muon_ns_b, &o.muon_ns_c};
    for (size_t i = 0; i < 3; ++i) number_field(*targets[i])(*a->get(i), what);
  };
}

using Schema = std::map<std::string, std::map<std::string, FieldReader>>;

Schema schema_for(Recipe& r) {
  ModelConfig& m = r.model;
  OptimizerConfig& o = r.optimizer;
  return Schema{
      {"", {{"name", string_field(r.name)}}},
      {"model",
       {{"depth", int_field(r.dial.depth)},
        {"aspect_ratio", int_field(r.dial.aspect_ratio)},
        {"head_dim", int_field(r.dial.head_dim)},
        {"vocab_size", int_field(m.vocab_size)},
        {"vocab_pad_multiple", int_field(m.vocab_pad_multiple)},
        {"sequence_len", int_field(m.sequence_len)},
        {"n_layer", int_field(m.n_layer)},
        {"n_embd", int_field(m.n_embd)},
        {"n_head", int_field(m.n_head)},
        {"n_kv_head", int_field(m.n_kv_head)},
        {"mlp_ratio", int_field(m.mlp_ratio)},
        {"attention_layers", attention_layers_field(m.attention_layers)},
        {"softcap", number_field(m.softcap)},
        {"rope_base", number_field(m.rope_base)},
        {"qk_gain", number_field(m.qk_gain)},
        {"residual_scalars", bool_field(m.residual_scalars)}}},
      {"batch", {{"tokens_per_step", int_field(r.tokens_per_step)}, {"micro_batch_rows", int_field(r.micro_batch_rows)}}},
      {"optimizer",
       {{"matrix_lr", number_field(o.matrix_lr)},
        {"muon_momentum", number_field(o.muon_momentum)},
        {"muon_momentum_start", number_field(o.muon_momentum_start)},
        {"muon_momentum_warmup_steps", int_field(o.muon_momentum_warmup_steps)},
        {"muon_momentum_final", number_field(o.muon_momentum_final)},
        {"muon_weight_decay", number_field(o.muon_weight_decay)},
        {"muon_ns_steps", small_int_field(o.muon_ns_steps)},
        {"muon_ns_coefficients", ns_coefficients_field(o)},
        {"embedding_lr", number_field(o.embedding_lr)},
        {"unembedding_lr", number_field(o.unembedding_lr)},
        {"adamw_lr_reference_width", number_field(o.adamw_lr_reference_width)},
        {"adam_beta1", number_field(o.adam_beta1)},
        {"adam_beta2", number_field(o.adam_beta2)},
        {"adam_eps", number_field(o.adam_eps)},
        {"weight_decay", number_field(o.weight_decay)},
        {"embedding_adam_beta2", number_field(o.embedding_adam_beta2)},
        {"unembedding_adam_beta2", number_field(o.unembedding_adam_beta2)},
        {"embedding_weight_decay", number_field(o.embedding_weight_decay)},
        {"unembedding_weight_decay", number_field(o.unembedding_weight_decay)},
        {"resid_scalar_lr", number_field(o.resid_scalar_lr)},
        {"resid_scalar_weight_decay", number_field(o.resid_scalar_weight_decay)},
        {"x0_scalar_lr", number_field(o.x0_scalar_lr)},
        {"x0_scalar_beta1", number_field(o.x0_scalar_beta1)},
        {"grad_clip", number_field(o.grad_clip)},
        {"sharded", bool_field(o.sharded)}}},
      {"schedule",
       {{"warmup_fraction", number_field(r.schedule.warmup_fraction)},
        {"warmdown_fraction", number_field(r.schedule.warmdown_fraction)},
        {"final_lr_fraction", number_field(r.schedule.final_lr_fraction)}}},
      {"run",
       {{"run_by", enum_field(r.run_by, {RunBy::budget, RunBy::steps}, run_by_name)},
        {"budget_seconds", number_field(r.budget_seconds)},
        {"step_time_margin", number_field(r.step_time_margin)},
        {"steps", int_field(r.steps)},
        {"tokens_per_parameter", number_field(r.dial.tokens_per_parameter)},
        {"startup_steps", int_field(r.startup_steps)},
        {"startup_cap_seconds", number_field(r.startup_cap_seconds)},
        {"seed", seed_field(r.seed)},
        {"nan_policy", enum_field(r.nan_policy, {NanPolicy::stop, NanPolicy::skip}, nan_policy_name)}}},
      {"eval",
       {{"every_steps", int_field(r.eval_every_steps)},
        {"every_seconds", number_field(r.eval_every_seconds)},
        {"tokens", int_field(r.eval_tokens)}}},
      {"checkpoint", {{"every_minutes", number_field(r.checkpoint_every_minutes)}}},
      {"backend",
       {{"name", string_field(r.backend)},
        {"threads", small_int_field(r.threads)},
        {"matmul_precision", parsed_field(r.matmul_precision, parse_matmul_precision, matmul_precision_choices)},
        {"fp8", bool_field(r.fp8)},
        {"attention", parsed_field(r.attention, parse_attention_kernels, attention_kernels_choices)},
        {"graphs", bool_field(r.graphs)}}},
      {"debug", {{"nan_loss_at_step", int_field(r.debug_nan_loss_at_step)}}},
  };
}

// The fields a file gives ("model.n_embd"), each with where it is (where_of), for the rules between
// fields that depend on what was given rather than on the value (the depth rule's conflicts).
using GivenFields = std::map<std::string, std::string>;

void read_table(const toml::table& table, const std::map<std::string, FieldReader>& fields, const std::string& prefix,
                const std::string& file, const Schema& schema, bool top_level, GivenFields& given) {
  for (const auto& [key_view, node] : table) {
    const std::string key(key_view.str());
    const std::string field = prefix.empty() ? key : prefix + "." + key;
    if (top_level && schema.count(key) == 1 && key != "") {
      const toml::table* sub = node.as_table();
      check(sub != nullptr, where_of(file, node, field), ": expected a table [", key, "]");
      read_table(*sub, schema.at(key), key, file, schema, false, given);
      continue;
    }
    auto it = fields.find(key);
    check(it != fields.end(), where_of(file, node, field), ": unknown field");
    it->second(node, where_of(file, node, field));
    given[field] = where_of(file, node, field);
  }
}

// The depth rule's batch anchor (frontier.md 3.3): nanochat takes B_ref = 2^19 tokens at its depth 12,
// where it measured the optimum for its T 2048, V 32768 and data. clocktrain has not measured its own
// optimum yet, so its anchor is the baseline's 65,536 tokens per step at the baseline's depth 10
// (model.md): a depth-10 recipe with the baseline's other fields resolves to the baseline's shape,
// batch and learning rates exactly.
constexpr int64_t kBatchReferenceDepth = 10;
constexpr double kBatchReferenceTokens = 65536.0;
// Power Lines (arXiv 2505.13738): the best batch grows as B ~ D^0.383 in the training tokens D; with
// D = ratio x N the ratio cancels against the reference's, leaving B ~ N^0.383.
constexpr double kBatchExponent = 0.383;

// The shape at `depth`: n_embd = depth x aspect_ratio rounded up to a multiple of both head_dim and
// the backend's width multiple, n_head = n_kv_head = n_embd / head_dim (nanochat's rule, frontier.md
// 3.1). The other fields (vocabulary, sequence length, MLP ratio, attention_layers) are the recipe's.
ModelConfig shape_at_depth(ModelConfig m, const DepthDial& dial, int64_t depth, int64_t width_multiple) {
  const int64_t unit = std::lcm(dial.head_dim, width_multiple);
  m.n_layer = depth;
  m.n_embd = (depth * dial.aspect_ratio + unit - 1) / unit * unit;
  m.n_head = m.n_kv_head = m.n_embd / dial.head_dim;
  return m;
}

// The depth rule's horizon: tokens = tokens_per_parameter x parameter_count() (nanochat's rule for this
// model: ratio 20 over every parameter, Chinchilla's), steps = tokens div tokens_per_step (at least 1).
// The schedule's fractions are of progress, so they need no scaling; a timed run's horizon is its
// budget, and this one is its run by steps.
int64_t horizon_steps(const Recipe& r) {
  const double tokens = r.dial.tokens_per_parameter * static_cast<double>(r.model.parameter_count());
  return std::max<int64_t>(1, static_cast<int64_t>(tokens / static_cast<double>(r.tokens_per_step)));
}

// Derives a depth recipe's shape, batch, learning rates and horizon (docs/model.md "One dial:
// model.depth"), once, when the file is read; refuses a field the rule derives when the file gives it
// too, naming both, and the dial's other fields without model.depth.
void apply_depth_dial(Recipe& r, const GivenFields& given, const std::string& where) {
  const DepthDial& d = r.dial;
  if (given.count("model.depth") == 0) {
    for (const char* f : {"model.aspect_ratio", "model.head_dim", "run.tokens_per_parameter"})
      check(given.count(f) == 0, given.count(f) ? given.at(f) : "", ": only with 'model.depth' (a recipe without it ",
            "gives n_layer, n_embd, n_head, n_kv_head, batch.tokens_per_step and run.steps itself)");
    return;
  }
  for (const char* f : {"model.n_layer", "model.n_embd", "model.n_head", "model.n_kv_head", "batch.tokens_per_step"})
    check(given.count(f) == 0, given.count(f) ? given.at(f) : "", ": not with 'model.depth', which derives it ",
          "(docs/model.md, \"One dial: model.depth\"); give one or the other");
  check(given.count("run.steps") == 0, given.count("run.steps") ? given.at("run.steps") : "",
        ": not with 'model.depth', which derives the horizon from 'run.tokens_per_parameter' (the command line's ",
        "--steps still overrides it)");
  auto field = [&](const char* name) { return given.count(name) ? given.at(name) : str(where, ": field '", name, "'"); };
  check(d.depth >= 1 && d.depth <= 4096, field("model.depth"), ": expected an integer from 1 to 4096, got ", d.depth);
  check(d.aspect_ratio >= 1 && d.aspect_ratio <= 65536, field("model.aspect_ratio"),
        ": expected an integer from 1 to 65536, got ", d.aspect_ratio);
  check(d.head_dim >= 2 && d.head_dim <= 65536 && d.head_dim % 2 == 0, field("model.head_dim"),
        ": expected an even integer from 2 to 65536 (rotary half split), got ", d.head_dim);
  // (the upper limit keeps steps, ratio x parameters / tokens_per_step, far inside int64)
  check(d.tokens_per_parameter > 0 && d.tokens_per_parameter <= 1e6, field("run.tokens_per_parameter"),
        ": expected a positive number up to 1e6, got ", d.tokens_per_parameter);

  const int64_t multiple = backend_width_multiple(r.backend, field("backend.name"));
  r.model = shape_at_depth(r.model, d, d.depth, multiple);
  r.model.validate(str(where, ": [model] as derived from depth ", d.depth));

  // Batch: B = 2^round(log2(B_ref (N / N_ref)^0.383)), N the matmul parameters (frontier.md 3.3) and
  // N_ref those of the reference depth built with this recipe's other fields; then whole rows.
  ModelConfig reference = shape_at_depth(r.model, d, kBatchReferenceDepth, multiple);
  reference.attention_layers.clear();
  const double ratio =
      static_cast<double>(r.model.matmul_parameter_count()) / static_cast<double>(reference.matmul_parameter_count());
  const double log2_batch = std::round(std::log2(kBatchReferenceTokens * std::pow(ratio, kBatchExponent)));
  const double batch = std::ldexp(1.0, static_cast<int>(std::clamp(log2_batch, 0.0, 40.0)));
  const int64_t rows = std::max<int64_t>(1, std::llround(batch / static_cast<double>(r.model.sequence_len)));
  r.tokens_per_step = rows * r.model.sequence_len;

  // Learning rates: the file's (or the baseline's) are those at B_ref; every one is multiplied by
  // sqrt(B / B_ref) (nanochat, Muon's included). The AdamW ones are further scaled for width at run
  // time, (n_embd / adamw_lr_reference_width)^-0.5, as in every recipe.
  const double batch_scale = std::sqrt(static_cast<double>(r.tokens_per_step) / kBatchReferenceTokens);
  r.optimizer.matrix_lr *= batch_scale;
  r.optimizer.embedding_lr *= batch_scale;
  r.optimizer.unembedding_lr *= batch_scale;
  r.optimizer.resid_scalar_lr *= batch_scale;  // (used with model.residual_scalars only)
  r.optimizer.x0_scalar_lr *= batch_scale;
  r.steps = horizon_steps(r);
}

}  // namespace

int64_t backend_width_multiple(const std::string& backend_name, const std::string& where) {
  // cpu: the bf16 GEMMs (AMX tiles, amx_gemm.cpp; AVX512-BF16 dot products, dot_gemm.cpp) take only
  // products whose M, N and K are multiples of 32 (anything else goes to oneDNN), and the dot GEMM
  // walks C's columns 64 at a time (4 vectors of 16: bf16_dot_gemm.h, blocks()), a narrower tail
  // taking 2-vector blocks; the f32 tile kernels' panels are 16 columns (f32_tile_gemm.h). A width
  // that is a multiple of 64 makes every dimension of the model's products that the width sets (C, 4C,
  // n_head x head_dim) a multiple of 64, so rounding never sends a product off those kernels nor leaves
  // a narrow tail (their K limits, 1024 for AMX and 4096 for the dot GEMM, are a matter of size). 128
  // would only add width: 64 is already a whole number of every block.
  // cuda: 128, the tensor-core GEMM tiles' width (and nanochat's rounding). host-device: the CPU's kernels.
  if (backend_name == "cpu" || backend_name == "host-device") return 64;
  if (backend_name == "cuda") return 128;
  fail(where, ": the depth rule rounds the width for \"cpu\" or \"host-device\" (64) or \"cuda\" (128), got \"", backend_name,
       "\"");
}

const char* run_by_name(RunBy run_by) { return run_by == RunBy::budget ? "budget" : "steps"; }
const char* nan_policy_name(NanPolicy nan_policy) { return nan_policy == NanPolicy::stop ? "stop" : "skip"; }

void Recipe::validate(const std::string& where) const {
  model.validate(where + ": [model]");
  auto field = [&](const char* name) { return str(where, ": field '", name, "'"); };
  check(tokens_per_step > 0 && tokens_per_step % model.sequence_len == 0, field("batch.tokens_per_step"),
        ": expected a positive multiple of model.sequence_len (", model.sequence_len, "), got ", tokens_per_step);
  check(micro_batch_rows > 0 && rows_per_step() % micro_batch_rows == 0, field("batch.micro_batch_rows"),
        ": expected a positive divisor of the rows per step (", rows_per_step(), "), got ", micro_batch_rows);
  check(std::isfinite(budget_seconds) && budget_seconds > 0, field("run.budget_seconds"),
        ": expected a positive number, got ", budget_seconds);
  check(std::isfinite(step_time_margin) && step_time_margin >= 1.0, field("run.step_time_margin"),
        ": expected a number >= 1, got ", step_time_margin);
  check(steps > 0, field("run.steps"), ": expected a positive integer, got ", steps);
  check(startup_steps >= 0, field("run.startup_steps"), ": expected >= 0, got ", startup_steps);
  check(startup_cap_seconds > 0, field("run.startup_cap_seconds"), ": expected a positive number");
  check(eval_every_steps >= 0, field("eval.every_steps"), ": expected >= 0");
  check(eval_every_seconds >= 0, field("eval.every_seconds"), ": expected >= 0");
  check(eval_tokens >= 0 && eval_tokens % model.sequence_len == 0, field("eval.tokens"),
        ": expected a multiple of model.sequence_len (", model.sequence_len, "), got ", eval_tokens);
  check(checkpoint_every_minutes >= 0, field("checkpoint.every_minutes"), ": expected >= 0");
  check(debug_nan_loss_at_step >= 0, field("debug.nan_loss_at_step"), ": expected >= 0 (0 = off)");
  check_thread_count(threads, field("backend.threads"));
  const OptimizerConfig& o = optimizer;
  check(o.matrix_lr >= 0 && o.embedding_lr >= 0 && o.unembedding_lr >= 0 && o.resid_scalar_lr >= 0 &&
            o.x0_scalar_lr >= 0,
        field("optimizer.*_lr"), ": learning rates must be >= 0");
  check(o.resid_scalar_weight_decay >= 0, field("optimizer.resid_scalar_weight_decay"), ": expected >= 0");
  check(o.x0_scalar_beta1 >= 0 && o.x0_scalar_beta1 < 1, field("optimizer.x0_scalar_beta1"), ": expected [0, 1)");
  check(o.muon_momentum >= 0 && o.muon_momentum < 1, field("optimizer.muon_momentum"), ": expected [0, 1)");
  check(o.muon_momentum_start >= 0 && o.muon_momentum_start < 1, field("optimizer.muon_momentum_start"),
        ": expected [0, 1)");
  check(o.muon_momentum_final >= 0 && o.muon_momentum_final < 1, field("optimizer.muon_momentum_final"),
        ": expected [0, 1) (0: no momentum warmdown)");
  check(o.muon_weight_decay >= 0, field("optimizer.muon_weight_decay"),
        ": expected >= 0 (0: no cautious weight decay on the Muon matrices)");
  check(o.muon_ns_steps >= 0, field("optimizer.muon_ns_steps"), ": expected >= 0");
  check(o.adam_beta1 >= 0 && o.adam_beta1 < 1, field("optimizer.adam_beta1"), ": expected [0, 1)");
  check(o.adam_beta2 >= 0 && o.adam_beta2 < 1, field("optimizer.adam_beta2"), ": expected [0, 1)");
  for (const auto& [name, beta2] :
       {std::pair<const char*, double>{"optimizer.embedding_adam_beta2", o.embedding_adam_beta2},
        {"optimizer.unembedding_adam_beta2", o.unembedding_adam_beta2}})
    check(beta2 < 1 && (beta2 >= 0 || beta2 == -1.0), field(name), ": expected [0, 1), or -1 for adam_beta2");
  for (const auto& [name, decay] :
       {std::pair<const char*, double>{"optimizer.embedding_weight_decay", o.embedding_weight_decay},
        {"optimizer.unembedding_weight_decay", o.unembedding_weight_decay}})
    check(decay >= 0 || decay == -1.0, field(name), ": expected >= 0, or -1 for weight_decay");
  check(o.adam_eps > 0, field("optimizer.adam_eps"), ": expected > 0");
  check(o.grad_clip >= 0, field("optimizer.grad_clip"), ": expected >= 0 (0 disables clipping)");
  check(o.adamw_lr_reference_width > 0, field("optimizer.adamw_lr_reference_width"), ": expected > 0");
  const ScheduleConfig& s = schedule;
  check(s.warmup_fraction >= 0 && s.warmdown_fraction >= 0 && s.warmup_fraction + s.warmdown_fraction <= 1,
        field("schedule.warmup_fraction"), ": warmup_fraction and warmdown_fraction must be >= 0 and sum to <= 1");
  check(s.final_lr_fraction >= 0, field("schedule.final_lr_fraction"), ": expected >= 0");
}

Recipe parse_recipe(const std::string& toml_text, const std::string& where) {
  toml::table table;
  try {
    table = toml::parse(toml_text, where);
  } catch (const toml::parse_error& e) {
    fail(where, ":", e.source().begin.line, ":", e.source().begin.column, ": invalid TOML: ", e.description());
  }
  Recipe recipe;
  recipe.source_path = where;
  Schema schema = schema_for(recipe);
  GivenFields given;
  read_table(table, schema.at(""), "", where, schema, true, given);
  apply_depth_dial(recipe, given, where);
  recipe.validate(where);
  return recipe;
}

Recipe load_recipe(const std::filesystem::path& path) { return parse_recipe(read_file(path), path.string()); }

Json to_json(const Recipe& r) {
  Json model = to_json(r.model);
  model.erase("format");
  model.erase("model_type");
  model.erase("architectures");
  model.erase("norm_eps");
  model.erase("padded_vocab_size");
  const OptimizerConfig& o = r.optimizer;
  Json resolved{
      {"name", r.name},
      {"model", model},
      {"batch", {{"tokens_per_step", r.tokens_per_step}, {"micro_batch_rows", r.micro_batch_rows}}},
      {"optimizer",
       {{"matrix_lr", o.matrix_lr},
        {"muon_momentum", o.muon_momentum},
        {"muon_momentum_start", o.muon_momentum_start},
        {"muon_momentum_warmup_steps", o.muon_momentum_warmup_steps},
        {"muon_momentum_final", o.muon_momentum_final},
        {"muon_weight_decay", o.muon_weight_decay},
        {"muon_ns_steps", o.muon_ns_steps},
        {"muon_ns_coefficients", {o.muon_ns_a, o.muon_ns_b, o.muon_ns_c}},
        {"embedding_lr", o.embedding_lr},
        {"unembedding_lr", o.unembedding_lr},
        {"adamw_lr_reference_width", o.adamw_lr_reference_width},
        {"adam_beta1", o.adam_beta1},
        {"adam_beta2", o.adam_beta2},
        {"adam_eps", o.adam_eps},
        {"weight_decay", o.weight_decay},
        {"embedding_adam_beta2", o.embedding_adam_beta2},
        {"unembedding_adam_beta2", o.unembedding_adam_beta2},
        {"embedding_weight_decay", o.embedding_weight_decay},
        {"unembedding_weight_decay", o.unembedding_weight_decay},
        {"resid_scalar_lr", o.resid_scalar_lr},
        {"resid_scalar_weight_decay", o.resid_scalar_weight_decay},
        {"x0_scalar_lr", o.x0_scalar_lr},
        {"x0_scalar_beta1", o.x0_scalar_beta1},
        {"grad_clip", o.grad_clip},
        {"sharded", o.sharded}}},
      {"schedule",
       {{"warmup_fraction", r.schedule.warmup_fraction},
        {"warmdown_fraction", r.schedule.warmdown_fraction},
        {"final_lr_fraction", r.schedule.final_lr_fraction}}},
      {"run",
       {{"run_by", run_by_name(r.run_by)},
        {"budget_seconds", r.budget_seconds},
        {"step_time_margin", r.step_time_margin},
        {"steps", r.steps},
        {"startup_steps", r.startup_steps},
        {"startup_cap_seconds", r.startup_cap_seconds},
        {"seed", r.seed},
        {"nan_policy", nan_policy_name(r.nan_policy)}}},
      {"eval", {{"every_steps", r.eval_every_steps}, {"every_seconds", r.eval_every_seconds}, {"tokens", r.eval_tokens}}},
      {"checkpoint", {{"every_minutes", r.checkpoint_every_minutes}}},
      {"backend",
       {{"name", r.backend},
        {"threads", r.threads},
        {"matmul_precision", matmul_precision_name(r.matmul_precision)},
        {"fp8", r.fp8},
        {"attention", attention_kernels_name(r.attention)},
        {"graphs", r.graphs}}},
  };
  // Only for a depth recipe, so that recipes without it keep their hashes.
  if (r.dial.depth != 0) {
    resolved["model"]["depth"] = r.dial.depth;
    resolved["model"]["aspect_ratio"] = r.dial.aspect_ratio;
    resolved["model"]["head_dim"] = r.dial.head_dim;
    resolved["run"]["tokens_per_parameter"] = r.dial.tokens_per_parameter;
  }
  // Only when set, so that recipes without it keep their hashes.
  if (r.debug_nan_loss_at_step != 0) resolved["debug"] = Json{{"nan_loss_at_step", r.debug_nan_loss_at_step}};
  return resolved;
}

std::unique_ptr<Backend> create_recipe_backend(const Recipe& r) {
  BackendOptions options;
  options.name = r.backend;
  options.threads = r.threads;
  options.matmul_precision = r.matmul_precision;
  options.fp8 = r.fp8;
  options.attention = r.attention;
  options.data_parallel = true;  // training: the launcher's processes train together
  try {
    return create_backend(options);
  } catch (const Error& e) {
    fail(r.source_path.empty() ? std::string("recipe") : r.source_path, ": [backend] (name \"", r.backend,
         "\", matmul_precision \"", matmul_precision_name(r.matmul_precision), "\", attention \"",
         attention_kernels_name(r.attention), "\"): ", e.what());
  }
}

std::string depth_summary(const Recipe& r) {
  const DepthDial& d = r.dial;
  if (d.depth == 0) return "";
  const ModelConfig& m = r.model;
  const int64_t unit = std::lcm(d.head_dim, backend_width_multiple(r.backend, "recipe"));
  return str("depth ", d.depth, ": n_layer ", m.n_layer, ", n_embd ", m.n_embd, " (", d.depth, " x ", d.aspect_ratio,
             " rounded up to a multiple of ", unit, "), n_head ", m.n_head, ", n_kv_head ", m.n_kv_head, " (head_dim ",
             d.head_dim, "), ", m.parameter_count(), " parameters; ", r.tokens_per_step, " tokens per step, learning rates x ",
             std::sqrt(static_cast<double>(r.tokens_per_step) / kBatchReferenceTokens), "; horizon ", d.tokens_per_parameter,
             " tokens per parameter = ", horizon_steps(r), " steps");
}

std::string recipe_hash(const Recipe& recipe) { return sha256_hex(to_json(recipe).dump()); }

}  // namespace ct
