// scripts/lab_study.sh end to end, with the real `clocktrain lab` and a fake `clocktrain run` whose
// val_bpb follows 3 - 0.2 ln(steps) (steps = budget / 3), so that the study's commands, the ledger
// they fill and the fit they print can be checked before the real harness exists.
#include <regex>
#include <set>

#include "lab/ledger.h"
#include "lab_fixtures.h"
#include "util/files.h"

namespace ct::lab {
namespace {

// The script reads its settings from the environment: a study running in the same shell (e.g. one
// whose cpu-check is this test suite) must not leak its settings into these tests. The settings are
// read from the script itself (every ${NAME:-...} and ${NAME:+...}), so a new one is cleared too.
std::string clean_script_environment() {
  const std::string script = read_file(ct::test::source_dir() / "scripts" / "lab_study.sh");
  static const std::regex setting(R"(\$\{([A-Z_][A-Z0-9_]*):[-+])");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(script.begin(), script.end(), setting); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1].str());
  for (const char* expected : {"LEDGER", "SEEDS", "CPU_CHECK", "DRY_RUN", "DATA"})
    EXPECT_EQ(names.count(expected), 1u) << "scripts/lab_study.sh no longer reads " << expected << " as ${" << expected
                                         << ":-...}: update this test";
  std::string command = "env";
  for (const std::string& name : names) command += " -u " + name;
  return command + " ";
}

TEST(LabStudy, ScriptRunsTheWholeStudyAgainstAFakeRun) {
  ct::test::TempDir dir;
  test::ResultSpec spec;
  spec.seed = 424242;
  spec.budget_seconds = 515151;
  spec.steps = 616161;
  spec.val_bpb = 7.171717;
  Json result = test::result_json(spec, dir / "x");
  result["train_clock_seconds"] = 525252;  // replaced by budget - 1
  write_file_atomic(dir / "template.json", result.dump(2));
  fs::path fake = dir / "fake-run";
  write_file_atomic(fake, R"(#!/bin/sh
[ "$1" = run ] || exit 64
shift; recipe=$1; shift
seed=1; budget=300; out=runs
while [ $# -gt 0 ]; do
  case "$1" in --seed) seed=$2; shift;; --budget) budget=$2; shift;; --out) out=$2; shift;; esac
  shift
done
count_file=")" + (dir / "count").string() + R"("
count=$(cat "$count_file" 2>/dev/null || echo 0); count=$((count + 1)); echo $count > "$count_file"
set -- $(awk -v b="$budget" -v s="$seed" -v n="$count" \
  'BEGIN { steps = int(b / 3); printf "%d %.6f", steps, 3 - 0.2 * log(steps) + 0.002 * (s % 3) + 0.0003 * (n % 2) }')
mkdir -p "$out/run"
sed -e "s/424242/$seed/" -e "s/525252/$((budget - 1))/" -e "s/515151.0/$budget.0/" -e "s/515151/$budget/" -e "s/616161/$1/" -e "s/7.171717/$2/" \
  ")" + (dir / "template.json").string() + R"(" > "$out/run/result.json"
)");
  fs::permissions(fake, fs::perms::owner_all);
  fs::path script = ct::test::source_dir() / "scripts" / "lab_study.sh";
  auto r = ct::test::run_command("cd " + dir.path().string() + " && " + clean_script_environment() +
                                 "LEDGER=study.sqlite REPORT=study.html CPU_CHECK=true " +
                                 "RUN_BINARY=" + fake.string() + " " + script.string() + " " +
                                 ct::test::clocktrain_bin());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Ledger ledger(dir / "study.sqlite", false);
  auto experiments = ledger.experiments();
  ASSERT_EQ(experiments.size(), 2u);
  EXPECT_EQ(ledger.runs(experiments[0].id).size(), 10u);  // probe, smoke, 4 seeds x 2 arms
  EXPECT_EQ(ledger.runs(experiments[1].id).size(), 6u);   // probe, smoke, 2 seeds x 2 budgets
  for (const auto& e : experiments) EXPECT_TRUE(ledger.rung_passed(e.id, Rung::cpu_check));
  // The A/A verdict was reached (arms identical, so paired on the seeds) and stored.
  auto verdicts = ledger.verdicts(experiments[0].id);
  ASSERT_EQ(verdicts.size(), 1u) << r.output;
  EXPECT_EQ(verdicts[0].numbers["design"], "paired");
  EXPECT_NEAR(verdicts[0].numbers["effect"].get<double>(), 0.0, 0.001);
  // Elasticity over 120, 300 and 600 s: slope -0.2 per unit of ln(steps) on both ranges, up to the
  // rounding of steps and the seed terms.
  EXPECT_NE(r.output.find("levels by budget"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("-0.19"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir / "study.html"));
}

TEST(LabStudy, DryRunPrintsTheCommands) {
  ct::test::TempDir dir;
  fs::path script = ct::test::source_dir() / "scripts" / "lab_study.sh";
  auto r = ct::test::run_command("cd " + dir.path().string() + " && " + clean_script_environment() + "DRY_RUN=1 " +
                                 script.string() + " /opt/clocktrain");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("lab run EXP --arm B --rung full --ledger lab-study.sqlite --binary /opt/clocktrain -- "
                          "recipes/cpu-small.toml --budget 300 --seed 4"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("lab elasticity cpu-small --rung full"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "lab-study.sqlite"));
}

}  // namespace
}  // namespace ct::lab
