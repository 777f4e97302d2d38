// Arm hygiene and the verdict on a ledger built from synthetic runs with a known effect.
#include "lab/arms.h"

#include <algorithm>
#include <sstream>

#include "lab/lab_commands.h"
#include "lab/run_record.h"
#include "lab/statistics.h"
#include "lab_fixtures.h"

namespace ct::lab {
namespace {

using test::ResultSpec;
using test::write_run;

// A ledger with experiment 1 ("n_layer 4 -> 6", rule B - A < -0.005 at 95%), climbed to full.
struct Fixture {
  ct::test::TempDir dir;
  fs::path ledger_path = dir / "lab.sqlite";
  int64_t id = 0;
  int folder = 0;

  explicit Fixture(const std::vector<std::string>& declared = {"recipe.model.n_layer"}) {
    Ledger ledger(ledger_path, true);
    NewExperiment e = test::sample_experiment();
    e.declared = declared;
    id = ledger.add_experiment(e);
    ledger.add_check(test::passed_cpu_check(id));
    ledger.add_run(id, "B", Rung::probe, read_run_record(write_run(dir / "probe", treatment(1, 2.0))), {});
    ledger.add_run(id, "B", Rung::smoke, read_run_record(write_run(dir / "smoke", treatment(1, 1.9))), {});
  }
  static ResultSpec control(int64_t seed, double bpb) {
    ResultSpec s;
    s.seed = seed;
    s.val_bpb = bpb;
    return s;
  }
  static ResultSpec treatment(int64_t seed, double bpb) {
    ResultSpec s = control(seed, bpb);
    s.n_layer = 6;
    return s;
  }
  int64_t add(const std::string& arm, const ResultSpec& spec) {
    Ledger ledger(ledger_path, false);
    auto dir_path = write_run(dir / ("run" + std::to_string(folder++)), spec);
    return ledger.add_run(id, arm, Rung::full, read_run_record(dir_path), {});
  }
};

std::string verdict_error(const Fixture& f) {
  std::ostringstream out;
  try {
    lab_verdict(f.ledger_path, f.id, std::nullopt, out);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ArmHygiene, DeclaredKeysCoverTheirSubtree) {
  EXPECT_TRUE(declared_key_matches("recipe.model", "recipe.model.n_layer"));
  EXPECT_TRUE(declared_key_matches("recipe.model.*", "recipe.model.n_layer"));
  EXPECT_TRUE(declared_key_matches("binary", "binary.version"));
  EXPECT_TRUE(declared_key_matches("env.OMP_NUM_THREADS", "env.OMP_NUM_THREADS"));
  EXPECT_FALSE(declared_key_matches("recipe.model", "recipe.modelx"));
  EXPECT_FALSE(declared_key_matches("env.OMP", "env.OMP_NUM_THREADS"));
  EXPECT_FALSE(declared_key_matches("recipe.model.n_layer", "recipe.model"));
}

// result.json's resolved recipe repeats the seed and the budget (recipe.run.*): the seed replicates a
// configuration and the budget is compared once, as budget_seconds, so neither is a second key.
TEST(ArmHygiene, FingerprintLeavesOutTheSeedAndKeepsTheBudgetOnce) {
  ct::test::TempDir dir;
  ResultSpec spec;
  spec.seed = 3;
  spec.budget_seconds = 120;
  const RunRecord run = read_run_record(write_run(dir / "run", spec) / "result.json");
  const auto print = run_fingerprint(run);
  EXPECT_EQ(print.count("recipe.run.seed"), 0u);
  EXPECT_EQ(print.count("recipe.run.budget_seconds"), 0u);
  EXPECT_EQ(print.at("budget_seconds"), "120.0");
  EXPECT_EQ(print.at("recipe.run.run_by"), "\"budget\"");
  // Two runs that differ only in their seeds are the same configuration.
  spec.seed = 4;
  EXPECT_TRUE(differences(print, run_fingerprint(read_run_record(write_run(dir / "other", spec) / "result.json"))).empty());
}

TEST(ArmHygiene, HiddenDebugVariableOnOneArmBlocksTheVerdict) {
  Fixture f;
  double control[] = {1.740, 1.752, 1.731, 1.745}, treated[] = {1.722, 1.735, 1.720, 1.724};
  for (int s = 0; s < 4; ++s) {
    f.add("A", Fixture::control(s + 1, control[s]));
    ResultSpec b = Fixture::treatment(s + 1, treated[s]);
    b.environment["CLOCKTRAIN_DEBUG_FAST_MATH"] = "1";  // set on arm B only
    f.add("B", b);
  }
  std::string error = verdict_error(f);
  EXPECT_NE(error.find("verdict refused"), std::string::npos) << error;
  EXPECT_NE(error.find("env.CLOCKTRAIN_DEBUG_FAST_MATH"), std::string::npos) << error;
  EXPECT_EQ(error.find("recipe.model.n_layer"), std::string::npos) << "the declared change was reported: " << error;
  Ledger ledger(f.ledger_path, false);
  EXPECT_TRUE(ledger.verdicts().empty());
}

TEST(ArmHygiene, ExcludingTheContaminatedRunsAndRerunningUnblocks) {
  Fixture f;
  double control[] = {1.740, 1.752, 1.731}, treated[] = {1.722, 1.735, 1.720};
  std::vector<int64_t> contaminated;
  for (int s = 0; s < 3; ++s) {
    f.add("A", Fixture::control(s + 1, control[s]));
    ResultSpec b = Fixture::treatment(s + 1, treated[s]);
    if (s == 2) b.environment["OMP_PROC_BIND"] = "true";
    int64_t id = f.add("B", b);
    if (s == 2) contaminated.push_back(id);
  }
  EXPECT_NE(verdict_error(f).find("env.OMP_PROC_BIND"), std::string::npos);
  std::ostringstream out;
  EXPECT_THROW(lab_exclude(f.ledger_path, contaminated[0], "", out), Error);  // a reason is required
  lab_exclude(f.ledger_path, contaminated[0], "OMP_PROC_BIND set by mistake", out);
  f.add("B", Fixture::treatment(3, 1.721));
  EXPECT_EQ(verdict_error(f), "no error");
  Ledger ledger(f.ledger_path, false);
  EXPECT_EQ(*ledger.run(contaminated[0]).excluded_reason, "OMP_PROC_BIND set by mistake");
  Json n = ledger.verdicts(f.id).back().numbers;
  EXPECT_EQ(n["treatment"]["runs"], 3);
  EXPECT_EQ(std::find(n["treatment"]["run_ids"].begin(), n["treatment"]["run_ids"].end(), contaminated[0]),
            n["treatment"]["run_ids"].end());
}

TEST(ArmHygiene, ThreadCountOnOneRunBlocksTheVerdict) {
  Fixture f;
  f.add("A", Fixture::control(1, 1.74));
  f.add("A", Fixture::control(2, 1.75));
  f.add("B", Fixture::treatment(1, 1.72));
  ResultSpec odd = Fixture::treatment(2, 1.73);
  odd.threads = 1;
  f.add("B", odd);
  std::string error = verdict_error(f);
  EXPECT_NE(error.find("device.threads"), std::string::npos) << error;
}

// A recipe's "auto" precision runs bf16 on one machine and f32 on another: arms that ran different
// precisions are not the same configuration, and `lab diff` shows why each ran what it ran.
TEST(ArmHygiene, MatmulPrecisionOnOneRunBlocksTheVerdictAndDiffShowsWhy) {
  Fixture f;
  f.add("A", Fixture::control(1, 1.74));
  f.add("A", Fixture::control(2, 1.75));
  f.add("B", Fixture::treatment(1, 1.72));
  ResultSpec avx2 = Fixture::treatment(2, 1.73);
  avx2.matmul_precision = "f32";
  avx2.matmul_precision_reason = "auto: f32, the CPU level avx2 has no bf16 engine (bf16 needs avx512_bf16 or amx_bf16)";
  f.add("B", avx2);
  std::string error = verdict_error(f);
  EXPECT_NE(error.find("device.matmul_precision"), std::string::npos) << error;

  ct::test::TempDir dir;
  const fs::path left = write_run(dir / "left", Fixture::treatment(1, 1.72)), right = write_run(dir / "right", avx2);
  std::ostringstream out;
  lab_diff(f.ledger_path, left.string(), right.string(), out);
  EXPECT_NE(out.str().find("device.matmul_precision"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("the CPU level avx2 has no bf16 engine"), std::string::npos) << out.str();
}

TEST(ArmHygiene, UndeclaredChangeItselfBlocksAndDeclaringLaterUnblocks) {
  Fixture f(std::vector<std::string>{});  // nothing declared at propose time
  double control[] = {1.740, 1.752, 1.731}, treated[] = {1.722, 1.735, 1.720};
  for (int s = 0; s < 3; ++s) {
    f.add("A", Fixture::control(s + 1, control[s]));
    f.add("B", Fixture::treatment(s + 1, treated[s]));
  }
  EXPECT_NE(verdict_error(f).find("recipe.model.n_layer"), std::string::npos);
  std::ostringstream out;
  lab_declare(f.ledger_path, f.id, {"recipe.model.n_layer"}, out);
  EXPECT_EQ(verdict_error(f), "no error");
}

TEST(ArmHygiene, DeclaredChangeMustBeConstantWithinAnArm) {
  Fixture f;
  f.add("A", Fixture::control(1, 1.74));
  f.add("A", Fixture::control(2, 1.75));
  f.add("B", Fixture::treatment(1, 1.72));
  ResultSpec eight = Fixture::treatment(2, 1.70);
  eight.n_layer = 8;
  f.add("B", eight);
  EXPECT_NE(verdict_error(f).find("varies within an arm"), std::string::npos);
}

TEST(Verdict, KnownEffectIsAcceptedAndStoredWithItsNumbers) {
  Fixture f;
  double control[] = {1.740, 1.752, 1.731, 1.745}, treated[] = {1.722, 1.735, 1.720, 1.724};
  for (int s = 0; s < 4; ++s) {
    f.add("A", Fixture::control(s + 1, control[s]));
    f.add("B", Fixture::treatment(s + 1, treated[s]));
  }
  // An ineligible run is excluded, and says so.
  ResultSpec broken = Fixture::treatment(9, 1.5);
  broken.eligible = false;
  int64_t broken_id = f.add("B", broken);
  std::ostringstream out;
  EXPECT_EQ(lab_verdict(f.ledger_path, f.id, std::nullopt, out), "accept") << out.str();
  EXPECT_NE(out.str().find("left out run " + std::to_string(broken_id)), std::string::npos) << out.str();
  Ledger ledger(f.ledger_path, false);
  auto verdicts = ledger.verdicts(f.id);
  ASSERT_EQ(verdicts.size(), 1u);
  const Json& n = verdicts[0].numbers;
  EXPECT_EQ(verdicts[0].verdict, "accept");
  EXPECT_EQ(verdicts[0].rung, Rung::full);
  EXPECT_EQ(n["design"], "paired");
  // d by hand: differences -0.018, -0.017, -0.011, -0.021 -> mean -0.01675
  EXPECT_NEAR(n["effect"].get<double>(), -0.01675, 1e-12);
  std::vector<double> d = {-0.018, -0.017, -0.011, -0.021};
  double se = sample_std(d) / 2.0;
  EXPECT_NEAR(n["standard_error"].get<double>(), se, 1e-12);
  EXPECT_NEAR(n["interval"][1].get<double>(), -0.01675 + student_t_quantile(0.975, 3) * se, 1e-12);
  EXPECT_EQ(n["treatment"]["runs"], 4);
  EXPECT_EQ(n["prediction_hit"], true);
  EXPECT_EQ(n["declared_changes"][0], "recipe.model.n_layer");
}

TEST(Verdict, NoEffectWithinNoiseIsInconclusive) {
  Fixture f;
  // Treatment equal to control on average, noise ~0.01: the interval straddles -0.005.
  double control[] = {1.740, 1.752, 1.731}, treated[] = {1.748, 1.735, 1.744};
  for (int s = 0; s < 3; ++s) {
    f.add("A", Fixture::control(s + 1, control[s]));
    f.add("B", Fixture::treatment(s + 11, treated[s]));  // different seeds: unpaired
  }
  std::ostringstream out;
  EXPECT_EQ(lab_verdict(f.ledger_path, f.id, std::nullopt, out), "inconclusive") << out.str();
  EXPECT_NE(out.str().find("design: unpaired"), std::string::npos);
  EXPECT_NE(out.str().find("minimum detectable effect"), std::string::npos);
}

}  // namespace
}  // namespace ct::lab
