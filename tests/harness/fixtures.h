#pragma once
// Hand-built run records for the harness tests: a complete, eligible round-1 result and a small
// metrics log, so each test changes only what it is about.
#include <cmath>
#include <string>

#include "harness/metrics.h"
#include "harness/result.h"
#include "util/sha256.h"

namespace ct::test {

inline RunResult sample_result(const std::string& name = "cpu-small") {
  RunResult r;
  r.name = name;
  r.recipe.path = "recipes/cpu-small.toml";
  r.recipe.sha256 = sha256_hex("recipe");
  r.recipe.resolved = Json::parse(R"({"name": "cpu-small", "model": {"depth": 4}, "train": {"budget_seconds": 600}})");
  r.seed = 42;
  r.round = 1;
  r.parameters = 7340032;
  r.budget_seconds = 600;
  r.train_clock_seconds = 597.9;
  r.startup_seconds = 11.2;
  r.startup_cap_seconds = 900;
  r.steps = 85;
  r.tokens = 1392640;
  r.val_bpb = 1.734;
  r.val = ValScore{1234.5, 1027, 400, 20.1};
  CoreScore core;
  core.core = 0.051;
  core.label = "CORE-21";
  core.missing_tasks = {"coqa"};
  core.seconds = 612;
  core.tasks.push_back({"arc_easy", 10, "multiple_choice", 2376, 0.31, 0.08, 40.2, 0, 0});
  core.tasks.push_back({"lambada_openai", 0, "language_modeling", 5153, 0.12, 0.12, 50.5, 2, 1});
  r.core = core;
  for (const auto& check : required_checks(1)) r.gate.checks.push_back({check, true, "evidence for " + check});
  r.gate.eligible = true;
  r.data.manifest_sha256 = sha256_hex("manifest");
  r.data.shards_read = {{"train_000.bin", sha256_hex("s0")}, {"train_001.bin", sha256_hex("s1")}};
  r.binary = {"0.1.0+abc123", "GNU-12 Release"};
  r.device = {"cpu", "test CPU", 1, 2};
  r.environment = {{"CLOCKTRAIN_DATA", "/data"}, {"OMP_NUM_THREADS", "2"}};
  r.changed_source_lines = std::nullopt;
  r.run_dir = "runs/cpu-small-20261130-120000";
  r.created_unix = 1796040000.0;
  return r;
}

// A short metrics.jsonl: two startup steps, timed steps, two held-out evaluations and events.
inline std::string sample_metrics_jsonl(int steps = 12) {
  std::string out;
  double clock = 0;
  for (int step = 1; step <= steps; ++step) {
    if (step > 2) clock += 3.5;
    double loss = 9.0 - 0.3 * step;
    out += str(R"({"kind": "train", "step": )", step, R"(, "tokens": )", step * 16384, R"(, "clock_seconds": )", clock,
               R"(, "loss": )", loss, R"(, "lr_factor": 1.0, "grad_norm": 0.8, "tokens_per_second": 4700.5, )",
               R"("flops_per_second": 2.1e11, "mfu": 0.41, "step_seconds": 3.5})", "\n");
    if (step == 2) out += R"({"kind": "event", "step": 2, "clock_seconds": 0.0, "event": "clock_start", "detail": "startup 11.2 s"})" "\n";
    if (step % 5 == 0)
      out += str(R"({"kind": "eval", "step": )", step, R"(, "tokens": )", step * 16384, R"(, "clock_seconds": )", clock,
                 R"(, "split": "heldout", "loss": )", loss + 0.05, "}\n");
  }
  out += str(R"({"kind": "event", "step": )", steps, R"(, "clock_seconds": )", clock, R"(, "event": "stop", "detail": "budget"})", "\n");
  return out;
}

}  // namespace ct::test
