// Training throughput of a recipe on this machine: the trainer's step (zero grads, forward and
// backward over the micro-batches, gradient check, Muon + AdamW) on random tokens, timed step by
// step, next to the f32 GEMM peak measured in the same run through the same backend and library.
//
//   train_throughput_bench RECIPE [--threads N] [--steps N] [--warmup N] [--tokens-per-step N]
//                                 [--micro-batch-rows N] [--backend NAME] [--clock wall|cpu]
//                                 [--matmul-precision auto|f32|bf16] [--fp8 0|1] [--graphs 0|1]
//                                 [--attention auto|flash|cudnn|reference] [--profile-ops 0|1]
//
// --matmul-precision, --fp8, --graphs and --attention replace the recipe's [backend] fields.
//
// --clock cpu times with the process's CPU clock instead of the wall clock: on a shared machine, with
// one thread, that is close to what the step takes on an idle core (other programs' time slices are
// not counted, their cache and memory traffic still is). With more threads it also counts OpenMP's
// spin-waiting, so use it with --threads 1.
//
// Prints a human summary and one JSON line (prefix "json: ") with tokens/s, model FLOP/s (nanochat's
// count: model/config.h flops_per_token), the GEMM peak and their ratio (MFU against the measured
// peak), and the median seconds of each phase. bench/train_throughput.sh runs it next to PyTorch.
//
// The GEMM peak is measured next to the steps: after each measured step (outside its timing), square
// products of the model's matmul precision run for kGemmWindowSeconds (backend/gemm_peak.h GemmRate,
// timed on the steps' clock). The peak is the fastest single call of all the windows (the ceiling;
// conservative, since a step cannot stay that fast for a whole step). On the shared development VM
// the matmul rate swings about 2x from one moment to the next (docs/performance.md), so the bench also
// prints each step's model FLOP/s over the rate of the window right after it: the step against the
// machine it ran on.
//
// --profile-ops 1 also prints the wall-clock time of each backend op over the measured steps, per
// step, most first (backend/op_timing.h), and their sum against the step time. On the cuda backend
// it needs --graphs false: each op then waits for the device before and after (a slower step, whose
// tokens/s the JSON marks "profiled").
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_main.h"
#include "backend/backend.h"
#include "backend/op_timing.h"
#include "backend/gemm_peak.h"
#include "model/gpt.h"
#include "model/init_rng.h"
#include "optim/optimizer.h"
#include "train/train_step.h"
#include "train/recipe.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/json.h"
#include "util/threads.h"

namespace {

using namespace ct;

bool g_cpu_clock = false;

// How long the GEMM peak is measured after each step (docs/performance.md: a single 1536^3 call
// takes ~5 ms and swings 2x on the development VM; a window averages the swings as a step does).
constexpr double kGemmWindowSeconds = 0.25;

// Seconds on the chosen clock: monotonic wall time, or the process's CPU time.
double now_seconds() {
  if (!g_cpu_clock) return monotonic_seconds();
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

class Timer {
 public:
  Timer() : start_(now_seconds()) {}
  double seconds() const { return now_seconds() - start_; }
  void restart() { start_ = now_seconds(); }

 private:
  double start_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The op_timing table of the measured steps, per step.
void print_op_profile(int steps, double step_seconds) {
  const std::vector<op_timing::Row> rows = op_timing::rows();
  double total = 0.0;
  for (const op_timing::Row& row : rows) total += row.seconds;
  total /= steps;
  std::printf("  backend ops, wall clock per step (sum %.1f ms of a %.1f ms step):\n", 1000.0 * total,
              1000.0 * step_seconds);
  std::printf("  %9s %6s %6s  %s\n", "ms/step", "share", "calls", "op");
  for (const op_timing::Row& row : rows) {
    const double ms = 1000.0 * row.seconds / steps;
    std::printf("  %9.2f %5.1f%% %6lld  %s\n", ms, 100.0 * row.seconds / steps / step_seconds,
                static_cast<long long>(row.calls / steps), row.op.c_str());
  }
}

int run(int argc, char** argv) {
  check(argc >= 2, "usage: train_throughput_bench RECIPE [--threads N] [--steps N] [--warmup N] "
                   "[--tokens-per-step N] [--micro-batch-rows N] [--backend NAME]");
  Recipe recipe = load_recipe(argv[1]);
  const int64_t recipe_tokens_per_step = recipe.tokens_per_step;
  int threads = 0, steps = 5, warmup = 2;
  bool profile_ops = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--threads") threads = std::stoi(value);
    else if (flag == "--steps") steps = std::stoi(value);
    else if (flag == "--warmup") warmup = std::stoi(value);
    else if (flag == "--tokens-per-step") recipe.tokens_per_step = std::stoll(value);
    else if (flag == "--micro-batch-rows") recipe.micro_batch_rows = std::stoll(value);
    else if (flag == "--backend") recipe.backend = value;
    else if (flag == "--matmul-precision") recipe.matmul_precision = parse_matmul_precision(value, flag);
    else if (flag == "--fp8") recipe.fp8 = (value == "true" || value == "1");
    else if (flag == "--attention") recipe.attention = parse_attention_kernels(value, flag);
    else if (flag == "--graphs") recipe.graphs = (value == "true" || value == "1");
    else if (flag == "--clock") g_cpu_clock = (value == "cpu");
    else if (flag == "--profile-ops") profile_ops = (value == "true" || value == "1");
    else fail("train_throughput_bench: unknown option ", flag);
  }
  recipe.threads = threads;
  recipe.validate(std::string(argv[1]) + " (with the bench's options)");

  BackendOptions options;
  options.name = recipe.backend;
  options.threads = set_thread_count(threads);
  options.matmul_precision = recipe.matmul_precision;
  options.fp8 = recipe.fp8;
  options.attention = recipe.attention;
  auto backend = create_backend(options);
  // The CPU's ops are synchronous; another backend's are timed with a device wait around each one,
  // which graph regions forbid.
  check(!profile_ops || recipe.backend == "cpu" || !recipe.graphs,
        "train_throughput_bench: --profile-ops on the ", recipe.backend, " backend needs --graphs false");
  if (profile_ops && recipe.backend != "cpu") op_timing::set_synchronizer([&] { backend->synchronize(); });
  // Square products in the model's matmul precision, timed on the steps' clock.
  constexpr int64_t kProbeSize = 1536;
  GemmRate probe(*backend, kProbeSize, kProbeSize, kProbeSize, backend->matmul_operand_dtype(), &now_seconds);

  GPT model(*backend, recipe.model, DType::f32);  // matmul operands in the backend's dtype (gpt.h)
  model.initialize(recipe.seed);
  Optimizer optimizer(model, recipe.optimizer);
  const int64_t B = recipe.micro_batch_rows, T = recipe.model.sequence_len, micro = recipe.micro_steps();
  TrainStep train_step(model, optimizer, /*processes=*/nullptr, micro, B, T, recipe.graphs);
  uint64_t counter = 0;
  auto fill_batch = [&](std::vector<int32_t>& inputs, std::vector<int32_t>& targets) {
    inputs.resize(static_cast<size_t>(B * T));
    targets.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      inputs[i] = static_cast<int32_t>(splitmix64_mix(counter++) % static_cast<uint64_t>(recipe.model.vocab_size));
      targets[i] = static_cast<int32_t>(splitmix64_mix(counter++) % static_cast<uint64_t>(recipe.model.vocab_size));
    }
  };

  // The trainer's step (train/train_step.h): forward and backward of every micro-batch and the
  // gradient check with one wait, then the optimizer; graph regions where the backend has them.
  std::vector<double> step_s, forward_backward_s, optimizer_s, losses, gemm_rates, fractions;
  const double flops_per_step = recipe.model.flops_per_token() * static_cast<double>(recipe.tokens_per_step);
  for (int s = 0; s < warmup + steps; ++s) {
    if (s == warmup) op_timing::set_enabled(profile_ops);  // the measured steps only
    Timer step;
    const StepMeasurement measured = train_step.forward_backward(fill_batch);
    const double fwd_bwd = step.seconds();
    Timer w;
    train_step.apply(StepSchedule{}, measured.gradients.norm);
    backend->synchronize();
    const double opt = w.seconds(), total = step.seconds();
    double loss = 0;
    for (double l : measured.micro_losses) loss += l / static_cast<double>(micro);
    losses.push_back(loss);
    std::fprintf(stderr, "%s step %d: %.4f s (forward+backward %.4f, optimizer %.4f), loss %.4f\n",
                 s < warmup ? "warm-up" : "measured", s + 1, total, fwd_bwd, opt, loss);
    if (s < warmup) continue;
    step_s.push_back(total);
    forward_backward_s.push_back(fwd_bwd);
    optimizer_s.push_back(opt);
    // the GEMM rate right after the step, outside its timing, so that both see the same machine
    op_timing::set_enabled(false);
    gemm_rates.push_back(probe.window(kGemmWindowSeconds));
    fractions.push_back(flops_per_step / total / gemm_rates.back());
    op_timing::set_enabled(profile_ops);
  }
  op_timing::set_enabled(false);
  // The peak is the fastest call (the ceiling, conservatively high); the windows are a diagnostic.
  const double peak = probe.best_call(), window_rate = median(gemm_rates), window_fraction = median(fractions);
  const double step_median = median(step_s);
  const double tokens_per_second = static_cast<double>(recipe.tokens_per_step) / step_median;
  const double flops_per_second = recipe.model.flops_per_token() * tokens_per_second;

  std::printf("%s: %lld tokens/step (%lld x %lld rows of %lld), %d threads, %s clock, %s\n", recipe.name.c_str(),
              static_cast<long long>(recipe.tokens_per_step), static_cast<long long>(micro), static_cast<long long>(B),
              static_cast<long long>(T), options.threads, g_cpu_clock ? "process-CPU" : "wall",
              backend->device_description().c_str());
  std::printf("  step %.4f s (median of %d): forward+backward %.4f, optimizer %.4f; %s matmul operands, graphs %s\n",
              step_median, steps, median(forward_backward_s), median(optimizer_s), dtype_name(model.matmul_dtype()),
              train_step.uses_graphs() ? "on" : "off");
  std::printf("  %.0f tokens/s, %.1f GFLOP/s model, GEMM peak %.1f GFLOP/s: %.1f%% of peak; theoretical peak %.1f "
              "GFLOP/s: MFU %.1f%%\n",
              tokens_per_second, flops_per_second / 1e9, peak / 1e9, 100.0 * flops_per_second / peak,
              backend->peak_flops() / 1e9, 100.0 * flops_per_second / backend->peak_flops());
  std::printf("  GEMM windows (%lld^3 for %.2f s after each step): median %.1f GFLOP/s; each step against its window:",
              static_cast<long long>(kProbeSize), kGemmWindowSeconds, window_rate / 1e9);
  for (double f : fractions) std::printf(" %.1f%%", 100.0 * f);
  std::printf(" (median %.1f%%)\n", 100.0 * window_fraction);
  if (profile_ops) print_op_profile(steps, step_median);
  Json j{{"impl", "clocktrain"},
         {"recipe", recipe.name},
         {"matmul_precision", matmul_precision_name(backend->matmul_precision())},
         {"matmul_precision_reason", backend->matmul_precision_reason()},
         {"threads", options.threads},
         {"clock", g_cpu_clock ? "cpu" : "wall"},
         {"tokens_per_step", recipe.tokens_per_step},
         {"recipe_tokens_per_step", recipe_tokens_per_step},
         {"micro_batch_rows", B},
         {"steps", steps},
         {"step_seconds", step_median},
         {"forward_backward_seconds", median(forward_backward_s)},
         {"optimizer_seconds", median(optimizer_s)},
         {"step_ms", 1000.0 * step_median},
         {"fp8", recipe.fp8},
         {"attention", attention_kernels_name(recipe.attention)},
         {"graphs", train_step.uses_graphs()},
         {"profiled", profile_ops},
         {"memory_bytes", backend->memory_in_use_bytes()},
         {"losses", losses},
         {"tokens_per_second", tokens_per_second},
         {"flops_per_token", recipe.model.flops_per_token()},
         {"model_flops_per_second", flops_per_second},
         {"gemm_peak_flops", peak},
         {"theoretical_peak_flops", backend->peak_flops()},
         {"mfu", flops_per_second / backend->peak_flops()},
         {"fraction_of_peak", flops_per_second / peak},
         {"gemm_window_flops", window_rate},
         {"fraction_of_window", window_fraction},
         {"device", backend->device_description()}};
  std::printf("json: %s\n", j.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ct::bench::guarded_main("train_throughput_bench", [&] { return run(argc, argv); });
}
