#pragma once
// A checkpoint folder for the evaluators' tests, as the trainer writes one: config.json and
// model.safetensors of a random 2-layer GPT (non-zero weights everywhere), the small test tokenizer
// beside them, and SHA256SUMS over those files.
#include <functional>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "model/checkpoint.h"
#include "test_support.h"
#include "text/small_tokenizer.h"
#include "util/folder_checksums.h"

namespace ct::test {

// `edit`, when given, changes the model before it is saved (e.g. a NaN weight, written consistently
// with SHA256SUMS).
inline void make_tiny_checkpoint(const fs::path& dir, int64_t vocab_override = 0,
                                 const std::function<void(GPT&)>& edit = {}) {
  auto backend = make_cpu_backend(BackendOptions{});
  ModelConfig c;
  c.vocab_size = vocab_override ? vocab_override : small_tokenizer().vocab_size();
  c.sequence_len = 64;
  c.n_layer = 2;
  c.n_embd = 32;
  c.n_head = 2;
  c.n_kv_head = 2;
  GPT model(*backend, c);
  model.initialize(5);
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (auto& p : model.parameters()) {
    if (p.spec.init != ParamInit::zero) continue;
    std::vector<float> host(static_cast<size_t>(p.value.tensor().numel()));
    for (auto& v : host) v = normal(gen);
    backend->upload(p.value, host.data(), DType::f32);
  }
  if (edit) edit(model);
  save_model(model, dir);
  small_tokenizer().save(dir);
  write_folder_checksums(dir);
}

// Sets element `index` (row-major) of parameter `name` to `value`.
inline void set_parameter_element(GPT& model, const std::string& name, int64_t index, float value) {
  for (Parameter& p : model.parameters()) {
    if (p.spec.name != name) continue;
    std::vector<float> host(static_cast<size_t>(p.spec.shape.numel()));
    model.backend().download(host.data(), DType::f32, p.value);
    host.at(static_cast<size_t>(index)) = value;
    model.backend().upload(p.value, host.data(), DType::f32);
    model.weights_changed();
    return;
  }
  FAIL() << "no parameter " << name;
}

}  // namespace ct::test
