// Parity with PyTorch: clocktrain writes a tiny model's checkpoint, a batch, its loss and gradients, and
// its parameters after 3 optimizer steps; tests/python/torch_parity.py recomputes all of it with the
// reference model and optimizer written from docs/model.md and compares (relative error < 1e-4 in fp32).
#include <gtest/gtest.h>

#include <iomanip>
#include <sstream>

#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "model/tiny_model.h"
#include "optim/optimizer.h"
#include "test_support.h"

namespace ct {
namespace {

std::vector<int64_t> dims(const Shape& s) {
  std::vector<int64_t> d;
  for (int i = 0; i < s.ndim; ++i) d.push_back(s[i]);
  return d;
}

void write_tensors(GPT& model, bool grads, const std::filesystem::path& path, const std::map<std::string, std::string>& meta) {
  std::vector<std::vector<float>> host;
  host.reserve(model.parameters().size());
  SafetensorsWriter w;
  for (Parameter& p : model.parameters()) {
    host.emplace_back(static_cast<size_t>(p.spec.shape.numel()));
    model.backend().download(host.back().data(), DType::f32, grads ? p.grad : p.value);
    w.add(p.spec.name, "F32", dims(p.spec.shape), host.back().data());
  }
  for (const auto& [k, v] : meta) w.set_metadata(k, v);
  w.write(path);
}

std::string exact(double v) {
  std::ostringstream out;
  out << std::setprecision(17) << v;
  return out.str();
}

std::string json_list(const std::vector<double>& v) {
  std::ostringstream out;
  out << std::setprecision(17) << "[";
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  return out.str() + "]";
}

// Writes the files torch_parity.py reads for model `c` and optimizer `oc` (three steps at the places in
// the schedule given: by default lr factors 1, 0.6, 0.3 at progress 0, outside any warmdown) and runs it.
void check_parity(const ModelConfig& c, const OptimizerConfig& oc = {},
                  const std::vector<StepSchedule>& steps = {{1.0, 0.0, 0.0}, {0.6, 0.0, 0.0}, {0.3, 0.0, 0.0}}) {
  test::TempDir dir;
  auto backend = test::cpu_backend();
  GPT model(*backend, c);
  test::randomize_parameters(model, 31, 2.0);
  save_model(model, dir / "checkpoint");

  const int64_t B = 3, T = 16;
  std::vector<int32_t> x, y;
  test::random_batch(B, T, c.vocab_size, 12, x, y, 7);
  std::vector<double> lr_factors, warmdown, progresses;
  for (const StepSchedule& at : steps) {
    lr_factors.push_back(at.lr_factor);
    warmdown.push_back(at.warmdown_position);
    progresses.push_back(at.progress);
  }
  SafetensorsWriter batch;
  batch.add("inputs", "I32", {B, T}, x.data());
  batch.add("targets", "I32", {B, T}, y.data());
  batch.set_metadata("lr_factors", json_list(lr_factors));
  batch.set_metadata("grad_clip", exact(oc.grad_clip));
  batch.set_metadata("warmdown_positions", json_list(warmdown));
  batch.set_metadata("progresses", json_list(progresses));
  batch.set_metadata("optimizer", Json{{"muon_momentum", oc.muon_momentum},
                                       {"muon_momentum_warmup_steps", oc.muon_momentum_warmup_steps},
                                       {"muon_momentum_final", oc.muon_momentum_final},
                                       {"muon_weight_decay", oc.muon_weight_decay},
                                       {"embedding_adam_beta2", oc.embedding_adam_beta2},
                                       {"unembedding_adam_beta2", oc.unembedding_adam_beta2},
                                       {"embedding_weight_decay", oc.embedding_weight_decay},
                                       {"unembedding_weight_decay", oc.unembedding_weight_decay},
                                       {"resid_scalar_lr", oc.resid_scalar_lr},
                                       {"resid_scalar_weight_decay", oc.resid_scalar_weight_decay},
                                       {"x0_scalar_lr", oc.x0_scalar_lr},
                                       {"x0_scalar_beta1", oc.x0_scalar_beta1}}
                                      .dump());
  batch.write(dir / "batch.safetensors");

  model.zero_grad();
  const double loss = model.forward(x.data(), y.data(), B, T);
  model.backward(1.0);
  write_tensors(model, true, dir / "grads.safetensors", {{"loss", exact(loss)}});

  Optimizer opt(model, oc);
  std::vector<double> losses, norms;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i > 0) {
      model.zero_grad();
      losses.push_back(model.forward(x.data(), y.data(), B, T));
      model.backward(1.0);
    }
    GradientCheck g = opt.check_gradients();
    ASSERT_TRUE(g.finite());
    norms.push_back(g.norm);
    opt.step(steps[i], g.norm);
  }
  EXPECT_GT(norms[0], oc.grad_clip) << "the test should exercise clipping";
  write_tensors(model, false, dir / "steps.safetensors", {{"grad_norms", json_list(norms)}, {"losses", json_list(losses)}});

  auto r = test::run_command(test::python() + " " + (test::source_dir() / "tests/python/torch_parity.py").string() + " " +
                             dir.path().string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::cout << r.output;
}

TEST(TorchParity, LossGradientsAndThreeOptimizerSteps) {
  CT_NEED_PYTHON_MODULES("torch numpy", test::python() + " lacks torch or numpy");
  check_parity(test::tiny_config());
}

// The frontier's model switches that need no new op (frontier.md 1.6, 1.8): nanochat's QK gain 1.2 on the
// normalised q and k (the reference multiplies q and k; clocktrain scales the attention logits by the
// gain squared) and rotary base 100000.
TEST(TorchParity, WithQkGainAndRopeBase) {
  CT_NEED_PYTHON_MODULES("torch numpy", test::python() + " lacks torch or numpy");
  ModelConfig c = test::tiny_config();
  c.qk_gain = 1.2;
  c.rope_base = 100000.0;
  check_parity(c);
}

// nanochat's 2026 momentum schedule (frontier.md 2.6): after the warm-up (here one step), linear from
// muon_momentum to muon_momentum_final over the lr warmdown.
TEST(TorchParity, WithMuonMomentumWarmdown) {
  CT_NEED_PYTHON_MODULES("torch numpy", test::python() + " lacks torch or numpy");
  OptimizerConfig oc;
  oc.muon_momentum = 0.97;
  oc.muon_momentum_warmup_steps = 1;
  oc.muon_momentum_final = 0.90;
  check_parity(test::tiny_config(), oc, {{1.0, 0.0, 0.0}, {0.6, 0.5, 0.0}, {0.3, 1.0, 0.0}});
}

// nanochat's cautious weight decay on the Muon matrices (frontier.md 2.4) at progress 0, 1/2 and 1
// (lambda_t = lambda_0, lambda_0 / 2, 0), with a lambda_0 large enough to move the weights visibly.
TEST(TorchParity, WithCautiousWeightDecay) {
  CT_NEED_PYTHON_MODULES("torch numpy", test::python() + " lacks torch or numpy");
  OptimizerConfig oc;
  oc.muon_weight_decay = 5.0;
  check_parity(test::tiny_config(), oc, {{1.0, 0.0, 0.0}, {0.6, 0.0, 0.5}, {0.3, 0.0, 1.0}});
}

// nanochat's per-group AdamW (frontier.md 2.5): wte with beta2 0.995 and weight decay 0.001, lm_head with
// 0.96 and 0.01 (decays made large here, 0.5 and 2, so that they move the weights visibly in 3 steps).
TEST(TorchParity, WithPerGroupAdamW) {
  CT_NEED_PYTHON_MODULES("torch numpy", test::python() + " lacks torch or numpy");
  OptimizerConfig oc;
  oc.embedding_adam_beta2 = 0.995;
  oc.unembedding_adam_beta2 = 0.96;
  oc.embedding_weight_decay = 0.5;
  oc.unembedding_weight_decay = 2.0;
  check_parity(test::tiny_config(), oc);
}

// nanochat's residual scalars (frontier.md 1.1): x = r_i x + a_i x0 before each layer, with r and a learned
// in their own AdamW groups (r: lr 0.005, weight decay 0.05; a: lr 0.5, beta1 0.96; the weight decay made
// large here, 2, so that it moves r visibly in 3 steps). The scalars start away from 1 and 0
// (randomize_parameters), so every term of the mix has a gradient.
TEST(TorchParity, WithResidualScalars) {
  CT_NEED_PYTHON_MODULES("torch numpy", test::python() + " lacks torch or numpy");
  ModelConfig c = test::tiny_config();
  c.residual_scalars = true;
  OptimizerConfig oc;
  oc.resid_scalar_weight_decay = 2.0;
  check_parity(c, oc);
}

}  // namespace
}  // namespace ct
