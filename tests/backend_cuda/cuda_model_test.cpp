// Device tests (skipped without a GPU): the whole GPT on the CUDA backend against the CPU backend:
// loss and every gradient on a small shape (f32 and bf16), graph-region steps equal to eager steps,
// a 50-step bf16 training run whose loss curve tracks the CPU's (both again with cuDNN's attention),
// and the evaluation paths.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "model/shared_prefix_eval.h"
#include "model/tiny_model.h"
#include "optim/optimizer.h"
#include "train/train_step.h"

namespace ct::test {
namespace {

// head_dim 64 (the flash kernels' size in bf16), grouped-query heads, an MLP-only layer, vocab padding.
ModelConfig small_config() { return three_layer_config(300, 64, 128, 2, 1); }

std::vector<Values> gradients(GPT& model) {
  std::vector<Values> out;
  for (Parameter& p : model.parameters()) out.push_back(read(model.backend(), p.grad));
  return out;
}

// Loss and gradients of one forward/backward on `backend` with `dtype`, from the same parameters.
struct Pass {
  double loss;
  std::vector<Values> grads;
};
Pass one_pass(Backend& backend, DType dtype, uint64_t seed, const ModelConfig& config = small_config()) {
  GPT model(backend, config, dtype);
  randomize_parameters(model, seed, 1.0);
  model.refresh_compute_weights();
  std::vector<int32_t> inputs, targets;
  random_batch(2, 64, 300, seed, inputs, targets, /*ignore_every=*/13);
  model.zero_grad();
  const double loss = model.forward(inputs.data(), targets.data(), 2, 64);
  model.backward(1.0);
  return {loss, gradients(model)};
}

void expect_grads_close(const std::vector<Values>& actual, const std::vector<Values>& expected, double per_tensor,
                        double global) {
  ASSERT_EQ(actual.size(), expected.size());
  Values all_a, all_e;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LT(norm_relative_error(actual[i], expected[i]), per_tensor) << "parameter " << i;
    all_a.insert(all_a.end(), actual[i].begin(), actual[i].end());
    all_e.insert(all_e.end(), expected[i].begin(), expected[i].end());
  }
  EXPECT_LT(norm_relative_error(all_a, all_e), global);
}

TEST(CudaModel, F32LossAndGradientsMatchTheCpu) {
  CT_REQUIRE_CUDA();
  auto cpu_be = cpu_backend();
  const Pass reference = one_pass(*cpu_be, DType::f32, 5);
  const Pass gpu = one_pass(*cuda(), DType::f32, 5);
  EXPECT_NEAR(gpu.loss, reference.loss, 1e-5 * reference.loss);
  expect_grads_close(gpu.grads, reference.grads, 1e-4, 1e-4);
}

// The mixed-precision model (matmul_precision bf16: bf16 matmul operands and the activations that feed
// them; f32 residual stream, master weights, logits and losses): the loss within 1e-2;
// gradients pass ~20 bf16 roundings on their way down, so each tensor within 5e-2 and all of them
// together within 3e-2 (norm-relative).
TEST(CudaModel, Bf16LossAndGradientsAreCloseToTheCpu) {
  CT_REQUIRE_CUDA();
  auto cpu_be = cpu_backend();
  const Pass reference = one_pass(*cpu_be, DType::f32, 6);
  const Pass gpu = one_pass(*cuda({"bf16"}), DType::f32, 6);
  EXPECT_NEAR(gpu.loss, reference.loss, 1e-2 * reference.loss);
  expect_grads_close(gpu.grads, reference.grads, 5e-2, 3e-2);
}

// A learnable stream: each row counts up from a random start (mod vocab), so the next token is
// predictable and the loss falls quickly.
void counting_batch(int64_t rows, int64_t T, int64_t vocab, uint64_t step, std::vector<int32_t>& inputs,
                    std::vector<int32_t>& targets) {
  inputs.resize(static_cast<size_t>(rows * T));
  targets.resize(inputs.size());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t start = static_cast<int64_t>(splitmix64_mix(step * 131 + static_cast<uint64_t>(r)) % vocab);
    for (int64_t t = 0; t < T; ++t) {
      inputs[static_cast<size_t>(r * T + t)] = static_cast<int32_t>((start + t) % vocab);
      targets[static_cast<size_t>(r * T + t)] = static_cast<int32_t>((start + t + 1) % vocab);
    }
  }
}

std::vector<double> train_losses(Backend& backend, DType dtype, bool graphs, int steps, GPT** keep = nullptr,
                                 const ModelConfig& model_config = small_config()) {
  static std::vector<std::unique_ptr<GPT>> kept;
  auto model = std::make_unique<GPT>(backend, model_config, dtype);
  model->initialize(42);
  OptimizerConfig config;
  Optimizer optimizer(*model, config);
  const int64_t micro = 2, rows = 4, T = 64;
  TrainStep step(*model, optimizer, /*processes=*/nullptr, micro, rows, T, graphs);
  std::vector<double> losses;
  uint64_t batch = 0;
  for (int s = 0; s < steps; ++s) {
    const StepMeasurement m = step.forward_backward([&](std::vector<int32_t>& in, std::vector<int32_t>& tg) {
      counting_batch(rows, T, 300, batch++, in, tg);
    });
    double loss = 0;
    for (double l : m.micro_losses) loss += l / micro;
    losses.push_back(loss);
    const double progress = static_cast<double>(s) / steps;
    step.apply({progress < 0.8 ? 1.0 : (1.0 - progress) / 0.2, 0.0, progress}, m.gradients.norm);
  }
  if (keep) {
    *keep = model.get();
    kept.push_back(std::move(model));
  }
  return losses;
}

void expect_graph_steps_equal_eager_steps(Backend& gpu) {
  GPT* eager_model = nullptr;
  GPT* graph_model = nullptr;
  const std::vector<double> eager = train_losses(gpu, DType::f32, false, 6, &eager_model);
  const std::vector<double> graphed = train_losses(gpu, DType::f32, true, 6, &graph_model);
  EXPECT_EQ(graphed, eager);
  for (size_t i = 0; i < eager_model->parameters().size(); ++i)
    EXPECT_EQ(read(gpu, graph_model->parameters()[i].value), read(gpu, eager_model->parameters()[i].value))
        << eager_model->parameters()[i].spec.name;
}

// Residual scalars (frontier.md 1.1): the mix and its backward on the device against the CPU; and steps
// replayed from graph regions equal eager steps, bit for bit: the kernels read r and a from device
// memory, where the optimizer moves them between replays.
TEST(CudaModel, WithResidualScalarsMatchesTheCpuAndReplaysAsEagerSteps) {
  CT_REQUIRE_CUDA();
  ModelConfig config = small_config();
  config.residual_scalars = true;
  auto cpu_be = cpu_backend();
  const Pass reference = one_pass(*cpu_be, DType::f32, 5, config);
  const Pass gpu = one_pass(*cuda(), DType::f32, 5, config);
  EXPECT_NEAR(gpu.loss, reference.loss, 1e-5 * reference.loss);
  expect_grads_close(gpu.grads, reference.grads, 1e-4, 1e-4);
  Backend& bf16 = *cuda({"bf16"});
  EXPECT_EQ(train_losses(bf16, DType::f32, true, 6, nullptr, config),
            train_losses(bf16, DType::f32, false, 6, nullptr, config));
}

TEST(CudaModel, GraphRegionStepsEqualEagerStepsBitForBit) {
  CT_REQUIRE_CUDA();
  expect_graph_steps_equal_eager_steps(*cuda({"bf16"}));
}

// The data-parallel path on one GPU (issue 44): with CLOCKTRAIN_NCCL_ONE_RANK=1 a training backend
// makes NCCL's communicator for its one rank, and every step reduces its gradients through it (the
// buckets begun in the last backward pass, on the second stream, inside the graph regions too). A sum
// over one rank is the gradient itself and the scale is 1: the same bits as without NCCL.
TEST(CudaModel, OneRankThroughNcclTrainsAsWithoutIt) {
  CT_REQUIRE_CUDA();
  ::setenv("CLOCKTRAIN_NCCL_ONE_RANK", "1", 1);
  BackendOptions options;
  options.name = "cuda";
  options.matmul_precision = MatmulPrecision::bf16;
  options.data_parallel = true;
  std::unique_ptr<Backend> through_nccl;
  std::string error;
  try {
    through_nccl = create_backend(options);
  } catch (const Error& e) {
    error = e.what();
  }
  ::unsetenv("CLOCKTRAIN_NCCL_ONE_RANK");
  ASSERT_TRUE(through_nccl) << error;
  EXPECT_TRUE(through_nccl->reduces_gradients());
  EXPECT_EQ(through_nccl->world_size(), 1);
  EXPECT_NE(through_nccl->device_description().find("rank 0 of 1 (NCCL "), std::string::npos)
      << through_nccl->device_description();
  Backend& plain = *cuda({"bf16"});
  EXPECT_FALSE(plain.reduces_gradients());
  for (const bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "graph regions" : "eager");
    EXPECT_EQ(train_losses(*through_nccl, DType::f32, graphs, 6), train_losses(plain, DType::f32, graphs, 6));
  }
}

void expect_fifty_steps_track_the_cpu(Backend& gpu_backend) {
  auto cpu_be = cpu_backend(0);
  const std::vector<double> reference = train_losses(*cpu_be, DType::f32, false, 50);
  const std::vector<double> gpu = train_losses(gpu_backend, DType::f32, true, 50);
  ASSERT_EQ(gpu.size(), reference.size());
  for (size_t s = 0; s < gpu.size(); ++s)
    EXPECT_NEAR(gpu[s], reference[s], 0.05 + 0.03 * reference[s]) << "step " << s + 1;
  EXPECT_LT(reference.back(), reference.front() - 1.0) << "the run must learn for the comparison to mean something";
  EXPECT_LT(gpu.back(), gpu.front() - 1.0);
}

TEST(CudaModel, FiftyBf16StepsTrackTheCpuLossCurve) {
  CT_REQUIRE_CUDA();
  expect_fifty_steps_track_the_cpu(*cuda({"bf16"}));
}

// The model with cuDNN's attention (CLOCKTRAIN_CUDA_ATTENTION=cudnn; head_dim 64, Tq = Tk: every
// attention call is cuDNN's): its executions replay inside the step's graph regions bit for bit,
// and training tracks the CPU's loss curve.
TEST(CudaModel, WithCudnnAttentionGraphStepsEqualEagerStepsAndTrackTheCpu) {
  CT_REQUIRE_CUDA();
  Backend* gpu = cuda({"bf16", false, "cudnn"});
  if (!gpu) GTEST_SKIP() << "no cuDNN attention: " << cuda_skip_reason();
  expect_graph_steps_equal_eager_steps(*gpu);
  expect_fifty_steps_track_the_cpu(*gpu);
}

TEST(CudaModel, EvaluationAndIncrementalInferenceAgreeInBf16) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda({"bf16"});
  GPT model(gpu, small_config(), DType::f32);
  randomize_parameters(model, 9, 1.0);
  model.refresh_compute_weights();
  std::vector<int32_t> inputs, targets;
  random_batch(2, 32, 300, 9, inputs, targets);
  std::vector<float> losses(64);
  model.evaluate(inputs.data(), targets.data(), 2, 32, losses.data());
  double mean = 0;
  for (float l : losses) mean += l / 64.0;
  EXPECT_NEAR(model.forward(inputs.data(), targets.data(), 2, 32), mean, 1e-3 * mean);
  // the KV-cache path, token by token after a prompt, against the full forward of the same tokens
  KVCache cache(model, 2, 32);
  std::vector<float> last(2 * 300);
  std::vector<int32_t> prompt(2 * 16), next(2);
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < 16; ++t) prompt[static_cast<size_t>(r * 16 + t)] = inputs[static_cast<size_t>(r * 32 + t)];
  model.forward_incremental(prompt.data(), 2, 16, cache, last.data());
  for (int t = 16; t < 32; ++t) {
    for (int r = 0; r < 2; ++r) next[static_cast<size_t>(r)] = inputs[static_cast<size_t>(r * 32 + t)];
    model.forward_incremental(next.data(), 2, 1, cache, last.data());
  }
  // full-sequence losses of the last position from the incremental logits
  for (int r = 0; r < 2; ++r) {
    const float* z = last.data() + r * 300;
    double max_z = z[0], sum = 0;
    for (int j = 0; j < 300; ++j) max_z = std::max<double>(max_z, z[j]);
    for (int j = 0; j < 300; ++j) sum += std::exp(z[j] - max_z);
    const double loss = max_z + std::log(sum) - z[targets[static_cast<size_t>(r * 32 + 31)]];
    EXPECT_NEAR(loss, losses[static_cast<size_t>(r * 32 + 31)], 0.03 * std::max(1.0, loss)) << "row " << r;
  }
}

// The forward written once (model/layer_forward.h) on the device, with fp8 off and on: evaluation,
// shared-prefix scoring (each row a group without a prefix) and logits() against the KV cache agree,
// so a model trained with fp8 MLP products is scored by the forward it was trained with.
TEST(CudaModel, EveryUseOfTheForwardAgreesWithAndWithoutFp8) {
  CT_REQUIRE_CUDA();
  for (bool fp8 : {false, true}) {
    Backend* gpu = cuda({"bf16", fp8});
    ASSERT_NE(gpu, nullptr);
    GPT model(*gpu, small_config(), DType::f32);
    randomize_parameters(model, 12, 1.0);
    model.refresh_compute_weights();
    const int64_t B = 2, T = 64, V = 300;
    std::vector<int32_t> inputs, targets;
    random_batch(B, T, V, 12, inputs, targets);
    std::vector<float> losses(static_cast<size_t>(B * T));
    model.evaluate(inputs.data(), targets.data(), B, T, losses.data());
    std::vector<SharedPrefixGroup> groups(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      groups[static_cast<size_t>(b)].inputs = {std::vector<int32_t>(inputs.begin() + b * T, inputs.begin() + (b + 1) * T)};
      groups[static_cast<size_t>(b)].targets = {
          std::vector<int32_t>(targets.begin() + b * T, targets.begin() + (b + 1) * T)};
    }
    std::vector<std::vector<SharedPrefixRowScores>> shared;
    SharedPrefixEvaluator(model).evaluate(groups, shared);
    for (int64_t i = 0; i < B * T; ++i)
      EXPECT_NEAR(shared[static_cast<size_t>(i / T)][0].loss[static_cast<size_t>(i % T)], losses[static_cast<size_t>(i)],
                  1e-3 * std::max(1.0f, losses[static_cast<size_t>(i)]))
          << "fp8 " << fp8 << " position " << i;
    std::vector<float> logits(static_cast<size_t>(B * T * V)), cached(static_cast<size_t>(B * V));
    model.logits(inputs.data(), B, T, logits.data());
    KVCache cache(model, B, T);
    model.forward_incremental(inputs.data(), B, T, cache, cached.data());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t v = 0; v < V; ++v) {
        const float want = logits[static_cast<size_t>(((b + 1) * T - 1) * V + v)];
        EXPECT_NEAR(cached[static_cast<size_t>(b * V + v)], want, 1e-3 * std::max(1.0f, std::abs(want)))
            << "fp8 " << fp8 << " row " << b << " token " << v;
      }
  }
}

}  // namespace
}  // namespace ct::test
