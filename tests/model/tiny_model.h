#pragma once
// Small shapes and helpers shared by the model, optim and train tests.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/config.h"
#include "model/gpt.h"
#include "backend/cpu/cpu_backend.h"
#include "model/init_rng.h"

namespace ct::test {

// Three layers, the middle one MLP-only, at the given sizes: the layout of every test model here.
inline ModelConfig three_layer_config(int64_t vocab_size, int64_t sequence_len, int64_t n_embd, int64_t n_head,
                                      int64_t n_kv_head) {
  ModelConfig c;
  c.vocab_size = vocab_size;
  c.sequence_len = sequence_len;
  c.n_layer = 3;
  c.n_embd = n_embd;
  c.n_head = n_head;
  c.n_kv_head = n_kv_head;
  c.attention_layers = {true, false, true};
  return c;
}

// A shape that exercises every path: vocab padding (200 -> 256), grouped-query attention (4 query
// heads over 2 key-value heads), and an MLP-only layer between two attention layers.
inline ModelConfig tiny_config() { return three_layer_config(200, 16, 32, 4, 2); }

// matmul_precision f32 (the reference) or bf16.
inline std::unique_ptr<Backend> cpu_backend(int threads = 2, MatmulPrecision matmul_precision = MatmulPrecision::f32) {
  BackendOptions o;
  o.name = "cpu";
  o.threads = threads;
  o.matmul_precision = matmul_precision;
  return make_cpu_backend(o);
}

// Every matrix ~ N(0, scale / sqrt(fan_in)) (wte ~ N(0, 1)), so that no gradient path is zero as it is
// at the real initialisation (lm_head and output projections start at 0); the residual scalars r ~
// 1 + N(0, 0.1 scale) and a ~ N(0, 0.2 scale), each layer its own.
inline void randomize_parameters(GPT& model, uint64_t seed, double scale = 1.0) {
  std::vector<double> host;
  for (Parameter& p : model.parameters()) {
    const int64_t n = p.spec.shape.numel();
    host.resize(static_cast<size_t>(n));
    const ParamGroup g = p.spec.group;
    const double std = g == ParamGroup::embedding       ? 1.0
                       : g == ParamGroup::resid_scalars ? 0.1 * scale
                       : g == ParamGroup::x0_scalars    ? 0.2 * scale
                                                        : scale / std::sqrt(static_cast<double>(p.spec.shape[1]));
    const double mean = g == ParamGroup::resid_scalars ? 1.0 : 0.0;
    const uint64_t key = init_stream_key(seed, p.spec.name + "/test");
    for (int64_t i = 0; i < n; ++i)
      host[static_cast<size_t>(i)] = mean + std * counter_normal(key, static_cast<uint64_t>(i));

    model.backend().upload(p.value, host.data(), DType::f64);
  }
}

// Tokens in [0, vocab) from a fixed generator; every `ignore_every`-th target is -1 (0 = none).
inline void random_batch(int64_t B, int64_t T, int64_t vocab, uint64_t seed, std::vector<int32_t>& inputs,
                         std::vector<int32_t>& targets, int64_t ignore_every = 0) {
  inputs.resize(static_cast<size_t>(B * T));
  targets.resize(inputs.size());
  for (int64_t i = 0; i < B * T; ++i) {
    inputs[static_cast<size_t>(i)] = static_cast<int32_t>(splitmix64_mix(seed * 1000003 + static_cast<uint64_t>(i)) % static_cast<uint64_t>(vocab));
    targets[static_cast<size_t>(i)] =
        static_cast<int32_t>(splitmix64_mix(seed * 7919 + 1 + static_cast<uint64_t>(i)) % static_cast<uint64_t>(vocab));
    if (ignore_every > 0 && i % ignore_every == ignore_every - 1) targets[static_cast<size_t>(i)] = -1;
  }
}

inline std::vector<double> download_f64(Backend& backend, const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  backend.download(out.data(), DType::f64, t);
  return out;
}

}  // namespace ct::test
