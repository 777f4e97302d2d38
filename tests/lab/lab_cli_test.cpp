// `clocktrain lab ...` end to end through the built binary, with a fake `clocktrain run` (a shell
// script given to lab run --binary) that writes a synthetic result.json where --out says.
#include <sstream>

#include "lab/ledger.h"
#include "lab_fixtures.h"

namespace ct::lab {
namespace {

using test::ResultSpec;

class LabCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ledger_ = dir_ / "lab.sqlite";
    // The template the fake run copies; it substitutes the seed and val_bpb it is given.
    ResultSpec spec;
    spec.n_layer = 4;
    write_file_atomic(dir_ / "template.json", test::result_json(spec, dir_ / "x").dump(2));
    fake_ = dir_ / "fake-clocktrain";
    write_file_atomic(fake_, R"(#!/bin/sh
# A stand-in for `clocktrain run RECIPE [--seed N] [--out DIR]`: logs its arguments, writes result.json.
echo "$@" >> ")" + (dir_ / "fake-argv.log").string() + R"("
[ "$1" = run ] || exit 64
shift; recipe=$1; shift
seed=1; out=runs
while [ $# -gt 0 ]; do
  case "$1" in --seed) seed=$2; shift;; --out) out=$2; shift;; esac
  shift
done
[ -n "$FAKE_NO_RESULT" ] && exit 3
if [ -n "$FAKE_FLAT" ]; then folder=$out; else folder=$out/$recipe-seed$seed; fi
mkdir -p "$folder"
sed -e "s/\"seed\": [0-9]*/\"seed\": $seed/" -e "s/\"val_bpb\": [0-9.]*/\"val_bpb\": ${FAKE_BPB:-1.7}/" \
  ")" + (dir_ / "template.json").string() + R"(" > "$folder/result.json"
exit 0
)");
    fs::permissions(fake_, fs::perms::owner_all);
  }

  ct::test::CommandResult lab(const std::string& args, const std::string& env = "") {
    return ct::test::run_command("cd " + dir_.path().string() + " && " + env + " " + ct::test::clocktrain_bin() +
                                 " lab " + args + " --ledger " + ledger_.string());
  }
  // lab run with the fake binary: options of lab run first, then -- and the run arguments.
  ct::test::CommandResult lab_run(const std::string& lab_args, const std::string& run_args,
                                  const std::string& env = "") {
    return ct::test::run_command("cd " + dir_.path().string() + " && " + env + " " + ct::test::clocktrain_bin() +
                                 " lab run " + lab_args + " --ledger " + ledger_.string() + " --binary " +
                                 fake_.string() + " -- " + run_args);
  }
  void propose() {
    auto r = lab("propose --change 'n_layer 4 -> 6' --hypothesis 'deeper is better' --predict -0.01 "
                 "--interval -0.02,0.0 --rule 'accept if mean(B) - mean(A) < -0.005 at 95%' "
                 "--declare recipe.model.n_layer");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(r.output.substr(0, 2), "1\n") << r.output;
  }
  void climb() {
    auto check = lab("check 1 -- true");
    ASSERT_EQ(check.exit_code, 0) << check.output;
    auto probe = lab_run("1 --arm A --rung probe", "cpu-small --budget 10");
    ASSERT_EQ(probe.exit_code, 0) << probe.output;
    auto smoke = lab_run("1 --arm A --rung smoke", "cpu-small --budget 60");
    ASSERT_EQ(smoke.exit_code, 0) << smoke.output;
  }

  ct::test::TempDir dir_;
  fs::path ledger_, fake_;
};

TEST_F(LabCli, RunIsRefusedWithoutAHypothesisAndNothingIsLaunched) {
  auto r = lab_run("1 --arm A --rung probe", "cpu-small");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("no ledger"), std::string::npos) << r.output;
  propose();
  r = lab_run("2 --arm A --rung probe", "cpu-small");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("no experiment 2"), std::string::npos) << r.output;
  // Ladder: probe before cpu-check is refused, also before launching.
  r = lab_run("1 --arm A --rung probe", "cpu-small");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("needs a passed cpu-check"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "fake-argv.log")) << "the run was launched although it could not be recorded";
}

TEST_F(LabCli, RunLaunchesTheBinaryAndRecordsItsFolderAndEnvironment) {
  propose();
  climb();
  auto r = lab_run("1 --arm B", "cpu-small --seed 7 --budget 300",
                   "CLOCKTRAIN_TEST_KNOB=on OMP_PROC_BIND=close LD_BIND_NOW=1 FAKE_BPB=1.65");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("run 3 recorded"), std::string::npos) << r.output;
  std::string argv = read_file(dir_ / "fake-argv.log");
  EXPECT_NE(argv.find("run cpu-small --seed 7 --budget 300 --out runs/lab/e1-B-full-"), std::string::npos) << argv;
  Ledger ledger(ledger_, false);
  StoredRun run = ledger.run(3);
  EXPECT_EQ(run.arm, "B");
  EXPECT_EQ(run.rung, Rung::full);
  EXPECT_EQ(run.record.seed, 7);
  EXPECT_DOUBLE_EQ(*run.record.val_bpb, 1.65);
  EXPECT_EQ(run.record.run_dir.filename(), "cpu-small-seed7");
  EXPECT_TRUE(fs::exists(run.record.run_dir / "result.json"));
  EXPECT_EQ(run.record.environment.at("CLOCKTRAIN_TEST_KNOB"), "on");
  EXPECT_EQ(run.record.environment.at("OMP_PROC_BIND"), "close");
  EXPECT_EQ(run.record.environment.at("OMP_NUM_THREADS"), "2");  // from result.json
  EXPECT_EQ(run.record.environment.count("LD_BIND_NOW"), 0u);  // not on the harness's list
  EXPECT_EQ(run.provenance.exit_code, 0);
  EXPECT_NE(run.provenance.command->find("--seed 7"), std::string::npos);
  EXPECT_LE(*run.provenance.started_unix, *run.provenance.finished_unix);

  // A harness that writes result.json into --out itself is recognised too.
  r = lab_run("1 --arm B", "cpu-small --seed 8 --out flat-run", "FAKE_FLAT=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Ledger(ledger_, false).run(4).record.run_dir, fs::canonical(dir_ / "flat-run"));

  // A run that wrote no result is an error and records nothing.
  r = lab_run("1 --arm B", "cpu-small --seed 9", "FAKE_NO_RESULT=1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("exited with status 3 and wrote no result.json"), std::string::npos) << r.output;
  EXPECT_EQ(Ledger(ledger_, false).runs(1).size(), 4u);
}

TEST_F(LabCli, HiddenEnvironmentDifferenceBlocksTheVerdictUntilRerun) {
  propose();
  climb();
  for (int seed = 1; seed <= 3; ++seed) {
    std::string bpb_a = seed == 1 ? "1.741" : seed == 2 ? "1.752" : "1.733";
    std::string bpb_b = seed == 1 ? "1.702" : seed == 2 ? "1.713" : "1.699";
    ASSERT_EQ(lab_run("1 --arm A", "cpu-small --seed " + std::to_string(seed), "FAKE_BPB=" + bpb_a).exit_code, 0);
    // Arm B's runs carry a debug variable that arm A's do not.
    ASSERT_EQ(lab_run("1 --arm B", "cpu-small --seed " + std::to_string(seed), "FAKE_BPB=" + bpb_b +
                                                                                " CLOCKTRAIN_DEBUG_SKIP_SYNC=1")
                  .exit_code,
              0);
  }
  auto verdict = lab("verdict 1");
  EXPECT_NE(verdict.exit_code, 0);
  EXPECT_NE(verdict.output.find("env.CLOCKTRAIN_DEBUG_SKIP_SYNC"), std::string::npos) << verdict.output;
  auto diff = lab("diff 3 4");
  EXPECT_EQ(diff.exit_code, 0) << diff.output;
  EXPECT_NE(diff.output.find("env.CLOCKTRAIN_DEBUG_SKIP_SYNC"), std::string::npos) << diff.output;
  EXPECT_NE(diff.output.find("UNDECLARED"), std::string::npos) << diff.output;
  auto show = lab("show 1");
  EXPECT_NE(show.output.find("arm hygiene at full: BLOCKED"), std::string::npos) << show.output;

  // A second experiment run cleanly gets its verdict.
  auto r = lab("propose --change 'n_layer 4 -> 6 (clean)' --hypothesis 'deeper is better' --predict -0.01 "
               "--interval -0.05,0.0 --rule 'accept if mean(B) - mean(A) < -0.005 at 95%' --declare recipe.model");
  ASSERT_EQ(r.output.substr(0, 2), "2\n") << r.output;
  ASSERT_EQ(lab("check 2 -- true").exit_code, 0);
  ASSERT_EQ(lab_run("2 --arm A --rung probe", "cpu-small").exit_code, 0);
  ASSERT_EQ(lab_run("2 --arm A --rung smoke", "cpu-small").exit_code, 0);
  for (int seed = 1; seed <= 3; ++seed) {
    std::string bpb_a = seed == 1 ? "1.741" : seed == 2 ? "1.752" : "1.733";
    std::string bpb_b = seed == 1 ? "1.702" : seed == 2 ? "1.713" : "1.699";
    ASSERT_EQ(lab_run("2 --arm A", "cpu-small --seed " + std::to_string(seed), "FAKE_BPB=" + bpb_a).exit_code, 0);
    ASSERT_EQ(lab_run("2 --arm B", "cpu-small --seed " + std::to_string(seed), "FAKE_BPB=" + bpb_b).exit_code, 0);
  }
  verdict = lab("verdict 2");
  EXPECT_EQ(verdict.exit_code, 0) << verdict.output;
  EXPECT_NE(verdict.output.find(": accept"), std::string::npos) << verdict.output;
  // d = mean(B) - mean(A) = (1.702+1.713+1.699 - 1.741-1.752-1.733)/3 = -0.104/3
  EXPECT_NE(verdict.output.find("-0.03733"), std::string::npos) << verdict.output;

  auto noise = lab("noise --recipe cpu-small");
  EXPECT_EQ(noise.exit_code, 0) << noise.output;
  EXPECT_NE(noise.output.find("seed spread"), std::string::npos) << noise.output;
  auto list = lab("list");
  EXPECT_NE(list.output.find("accept (full)"), std::string::npos) << list.output;

  auto report = lab("report --out report.html");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::string html = read_file(dir_ / "report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("n_layer 4 -&gt; 6 (clean)"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Self-contained: the only URL is the SVG namespace.
  std::string without_namespace = html;
  for (size_t at; (at = without_namespace.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    without_namespace.erase(at, 26);
  EXPECT_EQ(without_namespace.find("http"), std::string::npos);
}

TEST_F(LabCli, FailedCheckIsRecordedAndKeepsTheLadderClosed) {
  propose();
  auto r = lab("check 1 -- sh -c 'echo gradient mismatch; exit 4'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("gradient mismatch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAILED (exit status 4"), std::string::npos) << r.output;
  Ledger ledger(ledger_, false);
  auto checks = ledger.checks(1);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].passed);
  EXPECT_NE(checks[0].output_tail.find("gradient mismatch"), std::string::npos);
  EXPECT_FALSE(ledger.rung_passed(1, Rung::cpu_check));
}

TEST_F(LabCli, AddRecordsExistingFoldersAndElasticityFitsThem) {
  propose();
  climb();
  // Runs at 120, 300 and 600 s, two seeds each: steps grow with the budget, bpb falls.
  struct Point {
    double budget;
    int64_t steps;
    double bpb;
  };
  std::vector<Point> points = {{120, 40, 2.100}, {120, 42, 2.092}, {300, 100, 1.900},
                               {300, 103, 1.897}, {600, 200, 1.820}, {600, 196, 1.826}};
  std::string dirs;
  for (size_t i = 0; i < points.size(); ++i) {
    ResultSpec s;
    s.seed = static_cast<int64_t>(i % 2) + 1;
    s.budget_seconds = points[i].budget;
    s.steps = points[i].steps;
    s.val_bpb = points[i].bpb;
    auto folder = test::write_run(dir_ / ("budget" + std::to_string(i)), s);
    dirs += " " + folder.string();
  }
  auto r = lab("add 1 --arm A" + dirs);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto e = lab("elasticity cpu-small --rung full --speedup 5");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_NE(e.output.find("levels by budget"), std::string::npos) << e.output;
  // Two ranges, each with its own slope; the 5% speed-up at 600 s uses the second.
  EXPECT_NE(e.output.find("range"), std::string::npos);
  EXPECT_NE(e.output.find("extrapolated past the range"), std::string::npos) << e.output;
  // The same folder cannot be added twice to one experiment.
  r = lab("add 1 --arm A " + (dir_ / "budget0").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("already recorded"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ct::lab
