// clocktrain run: a normal run passes every gate check and writes result.json and report.html; each
// check fails when its rule is broken; the prepared data is cached.
#include <cmath>
#include <functional>

#include "harness/gate.h"
#include "harness/xml_check.h"
#include "run/run_test_support.h"
#include "util/json.h"
#include "util/sha256.h"

namespace ct::test {
namespace {

constexpr int kGateFailed = 3;

size_t folders_in(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_directory() ? 1 : 0;
  return n;
}

fs::path only_cache_entry(const fs::path& cache) {
  for (const auto& e : fs::directory_iterator(cache))
    if (e.is_directory()) return e.path();
  return {};
}

TEST(Run, NormalRunPassesEveryCheckAndTheSecondRunReusesThePreparedData) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "toy.toml");
  auto first = clocktrain_run(recipe, data, tmp / "cache", tmp / "run1");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("data: preparing"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("gate: eligible"), std::string::npos) << first.output;
  // The trusted evaluation's log line is followed by each validation document's val_bpb.
  EXPECT_NE(first.output.find("share  document\n"), std::string::npos) << first.output;

  const RunResult r = read_result_file(tmp / "run1");  // validates every field and the gate's consistency
  EXPECT_TRUE(r.gate.eligible);
  ASSERT_EQ(r.gate.checks.size(), 5u);
  const std::vector<std::string> order = {"time", "valid_score", "trusted_evaluation", "full_machine", "data"};
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(r.gate.checks[i].name, order[i]);
    EXPECT_TRUE(r.gate.checks[i].passed) << r.gate.checks[i].name << ": " << r.gate.checks[i].evidence;
  }
  ASSERT_TRUE(r.val_bpb.has_value());
  EXPECT_TRUE(std::isfinite(*r.val_bpb) && *r.val_bpb > 0);
  EXPECT_EQ(r.steps, 12);
  EXPECT_FALSE(r.data.shards_read.empty());
  EXPECT_NE(check_named(r, "trusted_evaluation").evidence.find("a separate process"), std::string::npos);
  EXPECT_NE(check_named(r, "data").evidence.find("weights initialised from seed 42"), std::string::npos);

  // The score is the evaluator's own output, read back from the file it wrote.
  const Json bpb = read_json_file(tmp / "run1" / "eval" / "bpb.json");
  EXPECT_DOUBLE_EQ(bpb["val_bpb"].get<double>(), *r.val_bpb);
  EXPECT_EQ(bpb["checkpoint_sha256"].get<std::string>(), sha256_file(tmp / "run1" / "checkpoint" / "model.safetensors"));
  for (const auto& f : bpb["files_read"]) {
    const std::string path = f.get<std::string>();
    EXPECT_TRUE(path.find("/checkpoint/") != std::string::npos || path.find("/data/val/") != std::string::npos) << path;
  }

  // The trusted val_bpb is the log's last row, and a scalar of the TensorBoard event file.
  const std::string log = read_file(tmp / "run1" / "metrics.jsonl");
  const Json last = Json::parse(log.substr(log.rfind('\n', log.size() - 2) + 1));
  EXPECT_EQ(last["kind"], "eval");
  EXPECT_EQ(last["split"], "val");
  EXPECT_DOUBLE_EQ(last["val_bpb"].get<double>(), *r.val_bpb);
  EXPECT_EQ(last["step"], 12);
  bool tagged = false;
  for (const auto& entry : fs::directory_iterator(tmp / "run1" / "tensorboard"))
    tagged |= read_file(entry.path()).find("eval/val_bpb") != std::string::npos;
  EXPECT_TRUE(tagged);

  const std::string html = read_file(tmp / "run1" / "report.html");
  EXPECT_NE(html.find("trusted_evaluation"), std::string::npos);
  EXPECT_TRUE(fs::exists(tmp / "run1" / "recipe.toml"));

  // The second run finds the data prepared: no new cache folder, the same pinned manifest.
  const fs::path prepared = only_cache_entry(tmp / "cache");
  const auto manifest_time = fs::last_write_time(prepared / "manifest.json");
  auto second = clocktrain_run(recipe, data, tmp / "cache", tmp / "run2");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("data: reusing the prepared data"), std::string::npos) << second.output;
  EXPECT_EQ(second.output.find("data: preparing"), std::string::npos);
  EXPECT_EQ(folders_in(tmp / "cache"), 1u);
  EXPECT_EQ(fs::last_write_time(prepared / "manifest.json"), manifest_time);
  const RunResult r2 = read_result_file(tmp / "run2");
  EXPECT_EQ(r2.data.manifest_sha256, r.data.manifest_sha256);

  // A run folder that holds a run is refused before anything runs.
  auto again = clocktrain_run(recipe, data, tmp / "cache", tmp / "run1");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.output.find("already holds a run"), std::string::npos) << again.output;

  // Last: xml_problem's scratch folder has this test's name, and removes ours with it.
  EXPECT_EQ(xml_problem(html), "");
}

TEST(Run, AnInjectedNaNFailsValidScore) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "nan.toml", "nan_policy = \"skip\"", "[debug]\nnan_loss_at_step = 5\n");
  auto run = clocktrain_run(recipe, data, tmp / "cache", tmp / "run");
  EXPECT_EQ(run.exit_code, kGateFailed) << run.output;
  EXPECT_NE(run.output.find("the gate failed: valid_score"), std::string::npos) << run.output;
  const RunResult r = read_result_file(tmp / "run");
  EXPECT_FALSE(r.gate.eligible);
  EXPECT_FALSE(check_named(r, "valid_score").passed);
  EXPECT_NE(check_named(r, "valid_score").evidence.find("NaN or Inf loss value(s) during training"), std::string::npos)
      << check_named(r, "valid_score").evidence;
  // The rest of the run was sound: the step was skipped, the checkpoint evaluated.
  EXPECT_TRUE(r.val_bpb.has_value());
  for (const char* name : {"time", "trusted_evaluation", "full_machine", "data"})
    EXPECT_TRUE(check_named(r, name).passed) << name << ": " << check_named(r, name).evidence;
}

TEST(Run, ABudgetOverrunFailsTime) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  // A run by steps is judged against its recipe's budget: 12 steps take longer than 1 ms.
  const fs::path recipe = write_run_recipe(tmp / "over.toml", "budget_seconds = 0.001");
  auto run = clocktrain_run(recipe, data, tmp / "cache", tmp / "run");
  EXPECT_EQ(run.exit_code, kGateFailed) << run.output;
  EXPECT_NE(run.output.find("gate FAIL time"), std::string::npos) << run.output;
  const RunResult r = read_result_file(tmp / "run");
  EXPECT_FALSE(check_named(r, "time").passed);
  EXPECT_NE(check_named(r, "time").evidence.find(" > budget"), std::string::npos) << check_named(r, "time").evidence;
  EXPECT_TRUE(check_named(r, "valid_score").passed);
}

TEST(Run, AStartupOverTheCapFailsTime) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "slow.toml", "startup_cap_seconds = 0.000001");
  auto run = clocktrain_run(recipe, data, tmp / "cache", tmp / "run");
  EXPECT_EQ(run.exit_code, kGateFailed) << run.output;
  const RunResult r = read_result_file(tmp / "run");
  EXPECT_FALSE(check_named(r, "time").passed);
  EXPECT_NE(check_named(r, "time").evidence.find(" > cap"), std::string::npos) << check_named(r, "time").evidence;
  // The trainer stopped before saving a checkpoint: nothing was evaluated, and the gate says so.
  EXPECT_FALSE(r.val_bpb.has_value());
  EXPECT_FALSE(check_named(r, "trusted_evaluation").passed);
  EXPECT_EQ(r.extra["train_stop"]["reason"], "startup_cap");
  // The report shows what went wrong at the top.
  EXPECT_NE(read_file(tmp / "run" / "report.html").find("no final checkpoint was saved"), std::string::npos);
}

// Runs once to fill the cache, then changes the prepared folder with `tamper` and runs again.
RunResult run_after_tampering(const TempDir& tmp, const std::function<void(const fs::path&, const fs::path&)>& tamper,
                              CommandResult& second) {
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "toy.toml");
  auto first = clocktrain_run(recipe, data, tmp / "cache", tmp / "run1");
  EXPECT_EQ(first.exit_code, 0) << first.output;
  tamper(only_cache_entry(tmp / "cache"), data);
  second = clocktrain_run(recipe, data, tmp / "cache", tmp / "run2");
  return read_result_file(tmp / "run2");
}

// A cached folder changed after preparation was reused ("reusing the prepared data", gate PASS data
// with a swapped tokenizer; a changed manifest only noted). It is checked against its pin now, and a
// damaged one is set aside and prepared again, saying why: first two swapped tokens of the tokenizer,
// then a shard renamed in the manifest too.
TEST(Run, ADamagedCacheIsPreparedAgain) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "toy.toml");
  auto first = clocktrain_run(recipe, data, tmp / "cache", tmp / "run1");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const fs::path prepared = only_cache_entry(tmp / "cache");
  const std::string pinned_manifest = read_file(prepared / "manifest.json");
  const std::string tokenizer = read_file(prepared / "tokenizer" / "tokenizer.tiktoken");
  const std::string damaged = "data: the prepared data " + prepared.string() + " is damaged, so it is prepared again: ";

  swap_tiktoken_tokens(prepared / "tokenizer" / "tokenizer.tiktoken", 97, 98);
  auto second = clocktrain_run(recipe, data, tmp / "cache", tmp / "run2");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find(damaged), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("the tokenizer files changed after preparation"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("data: preparing"), std::string::npos) << second.output;
  EXPECT_EQ(second.output.find("data: reusing"), std::string::npos) << second.output;
  EXPECT_EQ(read_file(prepared / "tokenizer" / "tokenizer.tiktoken"), tokenizer);
  EXPECT_TRUE(read_result_file(tmp / "run2").gate.eligible);

  Json m = read_json_file(prepared / "manifest.json");
  for (auto& s : m["shards"])
    if (s["name"] == "train_000.bin") s["name"] = "train_900.bin";
  write_file_atomic(prepared / "manifest.json", m.dump(2));
  fs::rename(prepared / "train_000.bin", prepared / "train_900.bin");
  auto third = clocktrain_run(recipe, data, tmp / "cache", tmp / "run3");
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_NE(third.output.find(damaged), std::string::npos) << third.output;
  EXPECT_NE(third.output.find("differs from the manifest as prepared"), std::string::npos) << third.output;
  EXPECT_EQ(read_file(prepared / "manifest.json"), pinned_manifest);
  EXPECT_FALSE(fs::exists(prepared / "train_900.bin"));
  const RunResult r = read_result_file(tmp / "run3");
  EXPECT_TRUE(r.gate.eligible);
  EXPECT_TRUE(check_named(r, "data").passed) << check_named(r, "data").evidence;
  EXPECT_EQ(folders_in(tmp / "cache"), 1u) << "the damaged folders are gone";
}

TEST(Run, ATrainerReadOfTheValidationFolderIsRefusedAndFailsData) {
  TempDir tmp;
  CommandResult run;
  // The cached train shard becomes a link to an identical copy inside DATA/val: without the guard
  // the trainer would read it (its bytes match the manifest); the guard refuses it.
  const RunResult r = run_after_tampering(
      tmp,
      [](const fs::path& prepared, const fs::path& data) {
        fs::copy_file(prepared / "train_000.bin", data / "val" / "train_000.bin");
        fs::remove(prepared / "train_000.bin");
        fs::create_symlink(fs::absolute(data / "val" / "train_000.bin"), prepared / "train_000.bin");
      },
      run);
  EXPECT_EQ(run.exit_code, kGateFailed) << run.output;
  const GateCheck& d = check_named(r, "data");
  EXPECT_FALSE(d.passed);
  EXPECT_NE(d.evidence.find("the trainer tried to open 1 forbidden file(s)"), std::string::npos) << d.evidence;
  EXPECT_NE(d.evidence.find("/val/train_000.bin"), std::string::npos) << d.evidence;
  EXPECT_NE(r.extra["train_stop"]["error"].get<std::string>().find("validation"), std::string::npos)
      << r.extra["train_stop"]["error"];
  // The trainer stopped with an error and reported no clock: the time check has no evidence and fails.
  EXPECT_FALSE(check_named(r, "time").passed);
}

TEST(Run, DataIsNeverPreparedFromTheValidationFolder) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  fs::remove_all(data / "corpus");
  fs::create_directory_symlink(fs::absolute(data / "val"), data / "corpus");
  auto run = clocktrain_run(write_run_recipe(tmp / "toy.toml"), data, tmp / "cache", tmp / "run");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("inside the validation set"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(tmp / "run" / "result.json"));
}

TEST(Run, Round2RunsCoreAndFailsWhenItPassesTheTimeout) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path(), /*with_core=*/true);
  // A 1 s budget of tiny steps: a step on a loaded machine (sanitizers, tests side by side) can take
  // far longer than the slowest of the last ten, so a wide margin keeps the time check out of the way.
  // The short budget is a practice run's (a real round 2 run trains 4 h: Round2RulesAreEnforced).
  const fs::path recipe = write_run_recipe(tmp / "toy.toml", "step_time_margin = 4.0");
  auto ok = clocktrain_run(recipe, data, tmp / "cache", tmp / "run1", "--round 2 --budget 1 --practice");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const RunResult r = read_result_file(tmp / "run1");
  EXPECT_EQ(r.round, 2);
  EXPECT_TRUE(r.practice);
  EXPECT_EQ(r.budget_seconds, 1.0);
  EXPECT_TRUE(r.core->full());
  ASSERT_TRUE(r.core.has_value());
  ASSERT_EQ(r.gate.checks.size(), 6u);
  EXPECT_EQ(r.gate.checks[5].name, "core_time");
  EXPECT_TRUE(r.gate.checks[5].passed) << r.gate.checks[5].evidence;
  EXPECT_NE(check_named(r, "trusted_evaluation").evidence.find("val_bpb and CORE"), std::string::npos);

  // Without --budget a practice run keeps the recipe's: this one trains its 12 steps, not 4 hours.
  auto late = clocktrain_run(recipe, data, tmp / "cache", tmp / "run2", "--round 2 --practice --core-timeout 0.001");
  EXPECT_EQ(late.exit_code, kGateFailed) << late.output;
  EXPECT_NE(late.output.find("12 steps"), std::string::npos) << late.output;
  const RunResult r2 = read_result_file(tmp / "run2");
  EXPECT_NE(r2.budget_seconds, kRound2BudgetSeconds);
  EXPECT_TRUE(check_named(r2, "time").passed) << check_named(r2, "time").evidence;
  EXPECT_FALSE(r2.gate.eligible);
  EXPECT_FALSE(check_named(r2, "core_time").passed);
  const size_t failed_line = late.output.find("the gate failed: ");
  ASSERT_NE(failed_line, std::string::npos) << late.output;
  EXPECT_NE(late.output.find("core_time", failed_line), std::string::npos) << late.output;
  EXPECT_NE(check_named(r2, "core_time").evidence.find("CORE did not finish"), std::string::npos);
  EXPECT_TRUE(check_named(r2, "valid_score").passed);
}

// A --max-per-task that leaves a task too few rows for its shots is refused before anything is prepared.
TEST(Run, AMaxPerTaskBelowATasksShotsIsRefusedFirst) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path(), /*with_core=*/true);
  const fs::path recipe = write_run_recipe(tmp / "toy.toml");
  auto r = clocktrain_run(recipe, data, tmp / "cache", tmp / "run", "--core --max-per-task 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--max-per-task 2: task 'mc_answer' takes 2 shots from its other rows, so it needs more "
                          "than 2 rows (give at least 3)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(tmp / "cache"));
  EXPECT_FALSE(fs::exists(tmp / "run"));
}

// SIGTERM (or Ctrl-C's SIGINT) during training ends `clocktrain run`: the run is recorded with the
// reason, nothing is evaluated, it is not eligible, and the exit status is the shell's 128 + signal.
TEST(Run, AStopSignalEndsTheRunRecordedAndUnscored) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "toy.toml");
  const fs::path out = tmp / "run";
  // (SIGTERM: a background job of a non-interactive shell starts with SIGINT ignored)
  const std::string run = clocktrain_bin() + " run " + recipe.string() + " --data " + data.string() + " --cache " +
                          (tmp / "cache").string() + " --out " + out.string() +
                          " --shard-tokens 20000 --heldout-tokens 2000 --no-progress --budget 600";
  auto r = run_command(run + " 2>&1 & pid=$!; for i in $(seq 1 1200); do grep -q '\"train\"' " +
                       (out / "metrics.jsonl").string() +
                       " 2>/dev/null && break; sleep 0.05; done; kill -TERM $pid; wait $pid; echo \"exit=$?\"");
  EXPECT_NE(r.output.find("exit=143"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("clocktrain run: stopped by SIGTERM during training; recorded in"), std::string::npos)
      << r.output;
  const RunResult result = read_result_file(out);
  EXPECT_EQ(result.extra["train_stop"]["reason"], "signal");
  EXPECT_FALSE(result.val_bpb.has_value());
  EXPECT_FALSE(result.gate.eligible);
  EXPECT_FALSE(fs::exists(out / "eval"));
  EXPECT_NE(result.extra["notes"].dump().find("stopped by SIGTERM, so nothing was evaluated"), std::string::npos)
      << result.extra["notes"].dump();
}

// Round 2's rules end to end: a short budget without --practice and a CORE subset each fail the gate
// with the rule in the evidence, and result.json records the subset.
TEST(Run, Round2RulesAreEnforced) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path(), /*with_core=*/true);
  const fs::path recipe = write_run_recipe(tmp / "toy.toml", "step_time_margin = 4.0");
  auto run = clocktrain_run(recipe, data, tmp / "cache", tmp / "short", "--round 2 --budget 1 --max-per-task 3");
  EXPECT_EQ(run.exit_code, kGateFailed) << run.output;
  const RunResult r = read_result_file(tmp / "short");
  EXPECT_FALSE(r.practice);
  EXPECT_FALSE(check_named(r, "time").passed);
  EXPECT_NE(check_named(r, "time").evidence.find("round 2 requires the budget of 14400 s"), std::string::npos)
      << check_named(r, "time").evidence;
  EXPECT_FALSE(check_named(r, "core_time").passed);
  EXPECT_NE(check_named(r, "core_time").evidence.find("on a subset (--max-per-task 3): round 2 requires the full CORE"),
            std::string::npos)
      << check_named(r, "core_time").evidence;
  ASSERT_TRUE(r.core.has_value());
  EXPECT_EQ(r.core->max_per_task, 3);
  EXPECT_FALSE(r.core->full());
  // The tie-break's count is recorded against the pinned baseline's commit, or says why not (a tree
  // without git, or a shallow clone without the pinned commit).
  ASSERT_TRUE(r.extra.contains("source_changes"));
  EXPECT_EQ(r.extra["source_changes"]["baseline"], "pinned");
  EXPECT_EQ(r.changed_source_lines.has_value(), r.extra["source_changes"]["lines"].is_number());
  EXPECT_EQ(r.changed_source_lines.has_value(), r.extra["source_changes"]["baseline_commit"].is_string());
  if (r.changed_source_lines)
    EXPECT_EQ(r.extra["source_changes"]["baseline_commit"].get<std::string>().size(), 40u);
  else
    EXPECT_FALSE(r.extra["source_changes"]["why_unknown"].get<std::string>().empty());
}

// The contract of `clocktrain lab run`: it launches `clocktrain run RECIPE ... --out DIR` and records
// DIR/result.json in its ledger.
TEST(Run, LabRunRecordsARealRun) {
  TempDir tmp;
  const fs::path data = make_run_data(tmp.path());
  const fs::path recipe = write_run_recipe(tmp / "toy.toml");
  auto lab = [&](const std::string& args) {
    return run_command("cd " + tmp.path().string() + " && " + clocktrain_bin() + " lab " + args);
  };
  const std::string ledger = " --ledger " + (tmp / "ledger.db").string();
  auto propose = lab("propose --change 'n_layer 2 -> 3' --hypothesis 'deeper is better' --predict -0.01 "
                     "--interval -0.02,0.0 --rule 'accept if mean(B) - mean(A) < -0.005 at 95%' "
                     "--declare recipe.model.n_layer" + ledger);
  ASSERT_EQ(propose.exit_code, 0) << propose.output;
  auto check = lab("check 1" + ledger + " -- true");
  ASSERT_EQ(check.exit_code, 0) << check.output;
  auto run = lab("run 1 --arm A --rung probe" + ledger + " -- " + recipe.string() + " --data " + data.string() +
                 " --cache cache --shard-tokens 20000 --heldout-tokens 2000 --no-progress");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("gate: eligible"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("run 1 recorded"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("gate eligible"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace ct::test
