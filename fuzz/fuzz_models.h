#pragma once
// A tiny model, backend and optimizer shared by the training-state target and the seed generator:
// every kind of layer (grouped-query attention, an MLP-only layer), small enough that its files are
// a few tens of KB.
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "fuzz_support.h"
#include "model/checkpoint.h"
#include "model/gpt.h"
#include "optim/optimizer.h"

namespace ct::fuzz {

inline ModelConfig tiny_model_config() {
  ModelConfig c;
  c.vocab_size = 40;
  c.vocab_pad_multiple = 8;
  c.sequence_len = 8;
  c.n_layer = 2;
  c.n_embd = 8;
  c.n_head = 2;
  c.n_kv_head = 1;
  c.mlp_ratio = 2;
  c.attention_layers = {true, false};
  return c;
}

struct TinyTraining {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<GPT> model;
  std::unique_ptr<Optimizer> optimizer;
};

inline TinyTraining make_tiny_training() {
  TinyTraining t;
  BackendOptions options;
  options.name = "cpu";
  options.threads = 1;
  t.backend = make_cpu_backend(options);
  t.model = std::make_unique<GPT>(*t.backend, tiny_model_config());
  t.model->initialize(1);
  t.optimizer = std::make_unique<Optimizer>(*t.model, OptimizerConfig{});
  return t;
}

// One per process; its config.json and model.safetensors are written into the scratch folder, where
// the training-state target puts the fuzzed training_state.safetensors beside them.
inline TinyTraining& tiny_training() {
  static TinyTraining t = [] {
    TinyTraining made = make_tiny_training();
    save_model(*made.model, scratch().path());
    return made;
  }();
  return t;
}

}  // namespace ct::fuzz
