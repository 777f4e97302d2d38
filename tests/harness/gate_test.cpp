#include "harness/gate.h"

#include <cmath>

#include <gmock/gmock.h>

#include "test_support.h"
#include "util/sha256.h"

namespace ct {
namespace {

using ::testing::HasSubstr;

// Evidence of an honest CPU run that passes every check.
struct Evidence {
  TrainEvidence train;
  EvalEvidence eval;
  DataPins pins;
  Evidence() {
    train.train_clock_seconds = 597.9;
    train.budget_seconds = 600;
    train.startup_seconds = 11.2;
    train.startup_cap_seconds = 900;
    train.backend = "cpu";
    train.threads_used = 2;
    train.cores_available = 2;
    train.machine_cpus = 2;
    train.machine_cpus_how = "2 CPUs online";
    train.shards_read = {{"train_000.bin", sha256_hex("s0")}, {"train_001.bin", sha256_hex("s1")}};
    train.files_opened = {"/data/tokens/train_000.bin", "/data/tokens/train_001.bin", "/data/tokens/manifest.json"};
    train.init = InitSource::from_seed(42);
    eval.saved_checkpoint_sha256 = sha256_hex("checkpoint");
    eval.evaluated_checkpoint_sha256 = eval.saved_checkpoint_sha256;
    eval.evaluator = "clocktrain 0.1.0 eval";
    eval.val_bpb = 1.734;
    eval.files_opened = {"/runs/a/checkpoint/model.safetensors", "/data/val/val_000.jsonl.zst"};
    eval.allowed_roots = {"/runs/a/checkpoint", "/data/val", "/data/eval_bundle"};
    eval.trainer_last_heldout_loss = 4.1;
    pins.manifest_sha256 = sha256_hex("manifest");
    pins.shard_sha256 = {{"train_000.bin", sha256_hex("s0")}, {"train_001.bin", sha256_hex("s1")},
                         {"train_002.bin", sha256_hex("s2")}};
    pins.forbidden_roots = {"/data/val", "/data/eval_bundle"};
  }
};

TEST(Gate, HonestRunPassesEveryCheckInOrder) {
  Evidence e;
  GateVerdict v = run_gate(e.train, e.eval, e.pins, rules_for_round(1));
  EXPECT_TRUE(v.eligible);
  std::vector<std::string> names;
  for (const auto& c : v.checks) {
    names.push_back(c.name);
    EXPECT_TRUE(c.passed) << c.name << ": " << c.evidence;
  }
  EXPECT_EQ(names, required_checks(1));
  EXPECT_EQ(v.checks[0].evidence, "clock 597.9 s <= budget 600 s; startup 11.2 s <= cap 900 s");
  EXPECT_EQ(v.checks[1].evidence, "val_bpb 1.7340 is finite; no NaN or Inf loss during training");
  EXPECT_THAT(v.checks[2].evidence, HasSubstr("recomputed by clocktrain 0.1.0 eval from the saved checkpoint"));
  EXPECT_THAT(v.checks[2].evidence, HasSubstr("held-out loss 4.1000 (information only, not the score)"));
  EXPECT_EQ(v.checks[3].evidence, "cpu: 2 thread(s) used of 2 CPU(s) on the machine (2 CPUs online); the job may run on 2");
  EXPECT_THAT(v.checks[4].evidence, HasSubstr("2 shard(s) read"));
  EXPECT_THAT(v.checks[4].evidence, HasSubstr("weights initialised from seed 42"));
}

TEST(Gate, Time) {
  Evidence e;
  e.train.train_clock_seconds = 600;  // equal to the budget is within it
  EXPECT_TRUE(check_time(e.train).passed);
  e.train.train_clock_seconds = 600.04;
  GateCheck over = check_time(e.train);
  EXPECT_FALSE(over.passed);
  EXPECT_THAT(over.evidence, HasSubstr("clock 600.04 s > budget 600 s"));
  e.train.train_clock_seconds = 10;
  e.train.startup_seconds = 901;
  GateCheck slow = check_time(e.train);
  EXPECT_FALSE(slow.passed);
  EXPECT_THAT(slow.evidence, HasSubstr("startup 901 s > cap 900 s"));
  e.train.startup_seconds = 5;
  e.train.train_clock_seconds = std::nan("");  // the trainer threw: no clock came back
  GateCheck none = check_time(e.train);
  EXPECT_FALSE(none.passed);
  EXPECT_EQ(none.evidence, "no training clock: the trainer did not return (budget 600 s, startup cap 900 s)");
}

TEST(Gate, ValidScore) {
  Evidence e;
  e.eval.val_bpb = std::nan("");
  GateCheck nan_bpb = check_valid_score(e.train, e.eval);
  EXPECT_FALSE(nan_bpb.passed);
  EXPECT_THAT(nan_bpb.evidence, HasSubstr("val_bpb is NaN"));
  e.eval.val_bpb = INFINITY;
  EXPECT_FALSE(check_valid_score(e.train, e.eval).passed);
  e.eval.val_bpb.reset();
  EXPECT_THAT(check_valid_score(e.train, e.eval).evidence, HasSubstr("val_bpb was not computed"));
  e.eval.val_bpb = 1.7;
  e.train.nonfinite_loss_events = 3;
  GateCheck nan_loss = check_valid_score(e.train, e.eval);
  EXPECT_FALSE(nan_loss.passed);
  EXPECT_THAT(nan_loss.evidence, HasSubstr("3 NaN or Inf loss value(s) during training"));
}

TEST(Gate, TrustedEvaluation) {
  {
    Evidence e;
    e.eval.evaluated_checkpoint_sha256 = sha256_hex("another checkpoint");
    GateCheck c = check_trusted_evaluation(e.eval);
    EXPECT_FALSE(c.passed);
    EXPECT_THAT(c.evidence, HasSubstr("not the saved one"));
    // The trainer's figure is still shown, for information.
    EXPECT_THAT(c.evidence, HasSubstr("information only"));
  }
  {
    Evidence e;
    e.eval.core_ran = true;
    e.eval.core = 0.05;
    e.eval.core_checkpoint_sha256 = sha256_hex("older checkpoint");
    EXPECT_THAT(check_trusted_evaluation(e.eval).evidence, HasSubstr("CORE was computed from checkpoint"));
    e.eval.core_checkpoint_sha256 = e.eval.saved_checkpoint_sha256;
    GateCheck ok = check_trusted_evaluation(e.eval);
    EXPECT_TRUE(ok.passed) << ok.evidence;
    EXPECT_THAT(ok.evidence, HasSubstr("val_bpb and CORE recomputed"));
  }
  {
    Evidence e;
    e.eval.evaluator.clear();
    EXPECT_FALSE(check_trusted_evaluation(e.eval).passed);
  }
  {
    Evidence e;  // no checkpoint hash recorded at all: nothing ties the score to the saved model
    e.eval.saved_checkpoint_sha256.clear();
    e.eval.evaluated_checkpoint_sha256.clear();
    EXPECT_FALSE(check_trusted_evaluation(e.eval).passed);
  }
  {
    Evidence e;
    e.eval.files_opened.push_back("/runs/a/metrics.jsonl");  // the trainer's log is not the checkpoint
    GateCheck c = check_trusted_evaluation(e.eval);
    EXPECT_FALSE(c.passed);
    EXPECT_THAT(c.evidence, HasSubstr("/runs/a/metrics.jsonl"));
  }
  {
    Evidence e;
    e.eval.files_opened.clear();
    e.eval.allowed_roots.clear();
    GateCheck c = check_trusted_evaluation(e.eval);
    EXPECT_TRUE(c.passed);
    EXPECT_THAT(c.evidence, HasSubstr("file reads were not recorded"));
  }
}

TEST(Gate, FullMachine) {
  Evidence e;
  e.train.threads_used = 1;
  GateCheck cpu = check_full_machine(e.train);
  EXPECT_FALSE(cpu.passed);
  EXPECT_EQ(cpu.evidence, "cpu: 1 thread(s) used of 2 CPU(s) on the machine (2 CPUs online); the job may run on 2");
  // taskset -c 0 ... --threads 1: one thread on the one CPU it may run on is not the machine
  e.train.cores_available = 1;
  cpu = check_full_machine(e.train);
  EXPECT_FALSE(cpu.passed);
  EXPECT_EQ(cpu.evidence, "cpu: 1 thread(s) used of 2 CPU(s) on the machine (2 CPUs online); the job may run on 1 "
                          "(its affinity: taskset or the launcher's binding)");
  // two threads squeezed onto one CPU neither
  e.train.threads_used = 2;
  EXPECT_FALSE(check_full_machine(e.train).passed);
  // a container given 2 CPUs by its quota, on a bigger machine it may run anywhere on: 2 threads pass,
  // and so do the default's 16 (one per CPU of its affinity); 1 does not
  e.train.cores_available = 16;
  e.train.machine_cpus_how = "cgroup quota 2.00 CPUs";
  EXPECT_TRUE(check_full_machine(e.train).passed);
  e.train.threads_used = 16;
  EXPECT_TRUE(check_full_machine(e.train).passed);
  e.train.threads_used = 1;
  EXPECT_FALSE(check_full_machine(e.train).passed);
  e.train.backend = "cuda";
  e.train.devices_used = 1;
  e.train.devices_present = 8;
  EXPECT_FALSE(check_full_machine(e.train).passed);
  e.train.devices_used = 8;
  GateCheck gpu = check_full_machine(e.train);
  EXPECT_TRUE(gpu.passed);
  EXPECT_EQ(gpu.evidence, "cuda: 8 device(s) used of 8 present");
  // the machine's GPUs as the driver counts them (util/machine_gpus.h), not the process's narrowed view
  e.train.devices_used = 1;
  e.train.devices_present_how = "NVML: 8 GPUs; this process sees 1 (CUDA_VISIBLE_DEVICES=0)";
  gpu = check_full_machine(e.train);
  EXPECT_FALSE(gpu.passed);
  EXPECT_EQ(gpu.evidence, "cuda: 1 device(s) used of 8 present (NVML: 8 GPUs; this process sees 1 "
                          "(CUDA_VISIBLE_DEVICES=0))");
  e.train.devices_used = e.train.devices_present = 0;
  EXPECT_FALSE(check_full_machine(e.train).passed);
  e.train.backend.clear();
  EXPECT_FALSE(check_full_machine(e.train).passed);
}

TEST(Gate, Data) {
  {
    Evidence e;
    e.train.shards_read.push_back({"train_009.bin", sha256_hex("s9")});
    GateCheck c = check_data(e.train, e.pins);
    EXPECT_FALSE(c.passed);
    EXPECT_THAT(c.evidence, HasSubstr("train_009.bin is not in the manifest"));
  }
  {
    Evidence e;
    e.train.shards_read[1].sha256 = sha256_hex("tampered");
    GateCheck c = check_data(e.train, e.pins);
    EXPECT_FALSE(c.passed);
    EXPECT_THAT(c.evidence, HasSubstr("train_001.bin has sha256"));
  }
  {
    Evidence e;
    e.train.files_opened.push_back("/data/val/val_000.jsonl.zst");
    GateCheck c = check_data(e.train, e.pins);
    EXPECT_FALSE(c.passed);
    EXPECT_THAT(c.evidence, HasSubstr("opened 1 forbidden file(s): /data/val/val_000.jsonl.zst"));
  }
  {
    Evidence e;
    e.train.files_opened.push_back("/data/validation_notes.txt");  // shares a prefix only
    EXPECT_TRUE(check_data(e.train, e.pins).passed);
  }
  {
    Evidence e;
    e.train.refused_opens.push_back("/data/eval_bundle/core.yaml");
    EXPECT_THAT(check_data(e.train, e.pins).evidence, HasSubstr("tried to open 1 forbidden file(s)"));
  }
  {
    Evidence e;
    e.train.init = InitSource::from_file("/tmp/pretrained.safetensors");
    GateCheck c = check_data(e.train, e.pins);
    EXPECT_FALSE(c.passed);
    EXPECT_THAT(c.evidence, HasSubstr("loaded from a file (/tmp/pretrained.safetensors)"));
    e.train.init = InitSource{};
    EXPECT_THAT(check_data(e.train, e.pins).evidence, HasSubstr("initialisation was not recorded"));
  }
  {
    Evidence e;
    e.train.shards_read.clear();
    EXPECT_FALSE(check_data(e.train, e.pins).passed);
    Evidence f;
    f.pins.forbidden_roots.clear();
    EXPECT_FALSE(check_data(f.train, f.pins).passed);
  }
  {
    // Many culprits: the evidence names a few and counts the rest.
    Evidence e;
    for (int i = 0; i < 10; ++i) e.train.shards_read.push_back({"extra_" + std::to_string(i), sha256_hex("x")});
    EXPECT_THAT(check_data(e.train, e.pins).evidence, HasSubstr("and 7 more"));
  }
}

TEST(Gate, Round2AddsCoreTime) {
  Evidence e;
  e.train.budget_seconds = kRound2BudgetSeconds;  // round 2's (Round2IsRulesNotALabel breaks it)
  e.train.train_clock_seconds = kRound2BudgetSeconds - 5;
  GateRules rules = rules_for_round(2);
  EXPECT_EQ(rules.core_timeout_seconds, 3600);
  GateVerdict missing = run_gate(e.train, e.eval, e.pins, rules);
  EXPECT_EQ(missing.checks.size(), 6u);
  EXPECT_EQ(missing.checks.back().name, "core_time");
  EXPECT_FALSE(missing.eligible);
  EXPECT_THAT(missing.checks.back().evidence, HasSubstr("CORE did not finish"));

  e.eval.core_ran = true;
  e.eval.core = 0.11;
  e.eval.core_checkpoint_sha256 = e.eval.saved_checkpoint_sha256;
  e.eval.core_seconds = 3599;
  GateVerdict ok = run_gate(e.train, e.eval, e.pins, rules);
  EXPECT_TRUE(ok.eligible);
  EXPECT_EQ(ok.checks.back().evidence, "CORE 0.1100 in 3599 s <= timeout 3600 s");

  e.eval.core_seconds = 3600.5;
  GateVerdict late = run_gate(e.train, e.eval, e.pins, rules);
  EXPECT_FALSE(late.eligible);
  EXPECT_EQ(late.failed_checks(), std::vector<std::string>{"core_time"});
  EXPECT_THROW(rules_for_round(3), Error);
}

// Round 2's rules: the 4-hour budget and the full CORE, each refused with the reason unless the run
// is a declared practice run.
TEST(Gate, Round2IsRulesNotALabel) {
  Evidence e;
  e.eval.core_ran = true;
  e.eval.core = 0.11;
  e.eval.core_checkpoint_sha256 = e.eval.saved_checkpoint_sha256;
  e.eval.core_seconds = 100;
  GateRules rules = rules_for_round(2);
  // a 600 s budget: time fails, saying what the round requires
  GateVerdict short_run = run_gate(e.train, e.eval, e.pins, rules);
  EXPECT_EQ(short_run.failed_checks(), std::vector<std::string>{"time"});
  EXPECT_THAT(short_run.find("time")->evidence,
              HasSubstr("round 2 requires the budget of 14400 s (a shorter run is a practice run: clocktrain run --practice)"));
  // round 1 has no such rule
  EXPECT_TRUE(run_gate(e.train, e.eval, e.pins, rules_for_round(1)).eligible);
  // CORE on the first 50 rows of each task: core_time fails
  e.train.budget_seconds = kRound2BudgetSeconds;
  e.eval.core_max_per_task = 50;
  GateVerdict subset = run_gate(e.train, e.eval, e.pins, rules);
  EXPECT_EQ(subset.failed_checks(), std::vector<std::string>{"core_time"});
  EXPECT_THAT(subset.find("core_time")->evidence,
              HasSubstr("on a subset (--max-per-task 50): round 2 requires the full CORE"));
  e.eval.core_max_per_task = 0;
  e.eval.core_task_subset = true;
  EXPECT_THAT(run_gate(e.train, e.eval, e.pins, rules).find("core_time")->evidence, HasSubstr("(--tasks)"));
  // a practice run takes both, and says it is one
  e.train.budget_seconds = 600;
  rules.practice = true;
  GateVerdict practice = run_gate(e.train, e.eval, e.pins, rules);
  EXPECT_TRUE(practice.eligible);
  EXPECT_THAT(practice.find("time")->evidence, HasSubstr("a practice run"));
  EXPECT_THAT(practice.find("core_time")->evidence, HasSubstr("allowed in a practice run"));
}

TEST(Gate, FailedChecksAndFind) {
  Evidence e;
  e.train.threads_used = 1;
  GateVerdict v = run_gate(e.train, e.eval, e.pins, rules_for_round(1));
  EXPECT_FALSE(v.eligible);
  EXPECT_EQ(v.failed_checks(), std::vector<std::string>{"full_machine"});
  EXPECT_EQ(v.find("full_machine")->evidence, "cpu: 1 thread(s) used of 2 CPU(s) on the machine (2 CPUs online); the job may run on 2");
  EXPECT_EQ(v.find("nonexistent"), nullptr);
}

}  // namespace
}  // namespace ct
