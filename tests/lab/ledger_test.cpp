// The ledger file: schema, migration from an older version, refusal of newer, foreign, corrupt and
// truncated files; hypothesis first; the ladder order.
#include "lab/ledger.h"

#include <sqlite3.h>

#include "lab/ledger_schema.h"
#include "lab_fixtures.h"
#include "test_support.h"

namespace ct::lab {
namespace {

using test::ResultSpec;
using test::sample_experiment;
using test::write_run;


using ct::test::error_of;

// Climbs cpu-check -> probe -> smoke for experiment `id` so that full runs may be recorded.
void climb_to_full(Ledger& ledger, int64_t id, const fs::path& scratch) {
  ledger.add_check(test::passed_cpu_check(id));
  ResultSpec probe;
  probe.budget_seconds = 10;
  probe.eligible = false;  // a probe needs a finite score, not an eligible gate
  ledger.add_run(id, "A", Rung::probe, read_run_record(write_run(scratch / "probe", probe)), {});
  ResultSpec smoke;
  smoke.budget_seconds = 60;
  ledger.add_run(id, "A", Rung::smoke, read_run_record(write_run(scratch / "smoke", smoke)), {});
}

TEST(Ledger, CreatesSchemaAndKeepsExperiments) {
  ct::test::TempDir dir;
  auto path = dir / "lab.sqlite";
  int64_t id;
  {
    Ledger ledger(path, true);
    auto e = sample_experiment();
    e.declared = {"recipe.model.n_layer"};
    id = ledger.add_experiment(e);
  }
  Ledger reopened(path, false);
  EXPECT_EQ(ledger_schema_version(reopened.db()), kLedgerSchemaVersion);
  EXPECT_EQ(reopened.db().query_int("PRAGMA application_id"), kLedgerApplicationId);
  Experiment e = reopened.experiment(id);
  EXPECT_EQ(e.hypothesis, "a deeper model reaches lower val_bpb in the same budget");
  EXPECT_EQ(e.rule_text, "accept if mean(B) - mean(A) < -0.005 at 95%");
  EXPECT_DOUBLE_EQ(e.confidence, 0.95);
  EXPECT_DOUBLE_EQ(e.predicted_low, -0.02);
  EXPECT_GT(e.created_unix, 1.6e9);
  ASSERT_EQ(e.declared.size(), 1u);
  EXPECT_EQ(e.declared[0], "recipe.model.n_layer");
}

TEST(Ledger, ProposeValidatesItsFields) {
  ct::test::TempDir dir;
  Ledger ledger(dir / "lab.sqlite", true);
  auto no_hypothesis = sample_experiment();
  for (const char* blank : {"", "  \n"}) {
    no_hypothesis.hypothesis = blank;
    EXPECT_NE(error_of([&] { ledger.add_experiment(no_hypothesis); }).find("--hypothesis is empty"), std::string::npos);
  }
  auto outside = sample_experiment();
  outside.predicted_effect = 0.05;
  EXPECT_NE(error_of([&] { ledger.add_experiment(outside); }).find("must contain --predict"), std::string::npos);
  auto conflicting = sample_experiment();
  conflicting.confidence = 0.9;  // the rule says 95%
  EXPECT_NE(error_of([&] { ledger.add_experiment(conflicting); }).find("give one of them"), std::string::npos);
  EXPECT_TRUE(ledger.experiments().empty());
}

TEST(Ledger, RunWithoutHypothesisIsRefused) {
  ct::test::TempDir dir;
  Ledger ledger(dir / "lab.sqlite", true);
  auto run = read_run_record(write_run(dir / "run1", ResultSpec{}));
  // No experiment 7: no hypothesis was written for it.
  EXPECT_NE(error_of([&] { ledger.add_run(7, "A", Rung::probe, run, {}); }).find("no experiment 7"),
            std::string::npos);
  // An experiment row whose hypothesis is blank cannot even be stored (CHECK constraint), so a
  // ledger edited by hand cannot smuggle one in.
  EXPECT_THROW(ledger.db().exec("INSERT INTO experiments(change, hypothesis, predicted_effect, predicted_low, "
                                "predicted_high, rule, rule_json, confidence, created_unix) VALUES('x', '  ', 0, 0, "
                                "0, 'accept if mean(B) - mean(A) < 0', '{}', 0.95, 0)"),
               Error);
  EXPECT_TRUE(ledger.runs().empty());
}

TEST(Ledger, LadderOrderIsEnforced) {
  ct::test::TempDir dir;
  Ledger ledger(dir / "lab.sqlite", true);
  int64_t id = ledger.add_experiment(sample_experiment());
  auto run = read_run_record(write_run(dir / "run1", ResultSpec{}));
  EXPECT_NE(error_of([&] { ledger.add_run(id, "A", Rung::full, run, {}); }).find("needs a passed smoke"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ledger.add_run(id, "A", Rung::probe, run, {}); }).find("needs a passed cpu-check"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ledger.add_run(id, "A", Rung::cpu_check, run, {}); }).find("lab check"),
            std::string::npos);
  // A failed check does not open the next rung.
  LadderCheck failed;
  failed.experiment_id = id;
  failed.rung = Rung::cpu_check;
  failed.command = "ctest";
  failed.exit_code = 8;
  failed.passed = false;
  ledger.add_check(failed);
  EXPECT_FALSE(ledger.rung_passed(id, Rung::cpu_check));
  EXPECT_THROW(ledger.add_run(id, "A", Rung::probe, run, {}), Error);
  LadderCheck passed = failed;
  passed.exit_code = 0;
  passed.passed = true;
  ledger.add_check(passed);
  // A probe whose score is not finite does not pass; smoke stays closed.
  ResultSpec nan_probe;
  nan_probe.val_bpb = std::nullopt;
  nan_probe.valid_score = false;
  ledger.add_run(id, "A", Rung::probe, read_run_record(write_run(dir / "nan_probe", nan_probe)), {});
  EXPECT_FALSE(ledger.rung_passed(id, Rung::probe));
  EXPECT_THROW(ledger.add_run(id, "A", Rung::smoke, run, {}), Error);
  // A probe launched by the lab that exited non-zero does not pass either.
  RunProvenance crashed;
  crashed.exit_code = 1;
  ledger.add_run(id, "A", Rung::probe, read_run_record(write_run(dir / "crashed_probe", ResultSpec{})), crashed);
  EXPECT_FALSE(ledger.rung_passed(id, Rung::probe));
  ledger.add_run(id, "A", Rung::probe, read_run_record(write_run(dir / "probe", ResultSpec{})), {});
  EXPECT_TRUE(ledger.rung_passed(id, Rung::probe));
  // A smoke run whose gate is not eligible does not open full.
  ResultSpec late;
  late.eligible = false;
  ledger.add_run(id, "B", Rung::smoke, read_run_record(write_run(dir / "late_smoke", late)), {});
  EXPECT_THROW(ledger.add_run(id, "A", Rung::full, run, {}), Error);
  ledger.add_run(id, "B", Rung::smoke, read_run_record(write_run(dir / "smoke", ResultSpec{})), {});
  ledger.add_run(id, "A", Rung::full, run, {});
  EXPECT_EQ(ledger.runs(id).back().rung, Rung::full);
  // The same folder twice in one experiment is refused; an unknown arm too.
  EXPECT_NE(error_of([&] { ledger.add_run(id, "A", Rung::full, run, {}); }).find("already recorded"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ledger.add_run(id, "C", Rung::full, run, {}); }).find("not named by its rule"),
            std::string::npos);
  // Ladders are per experiment: a second experiment starts at the bottom.
  int64_t second = ledger.add_experiment(sample_experiment());
  EXPECT_THROW(ledger.add_run(second, "A", Rung::smoke, run, {}), Error);
}

TEST(Ledger, RunKeepsEverythingItNeeds) {
  ct::test::TempDir dir;
  Ledger ledger(dir / "lab.sqlite", true);
  int64_t id = ledger.add_experiment(sample_experiment());
  climb_to_full(ledger, id, dir.path());
  ResultSpec spec;
  spec.seed = 17;
  spec.environment["CLOCKTRAIN_DEBUG_NANS"] = "1";
  auto record = read_run_record(write_run(dir / "run17", spec));
  RunProvenance provenance{"clocktrain run cpu-small --seed 17", 0, 100.0, 400.0};
  int64_t run_id = ledger.add_run(id, "B", Rung::full, record, provenance);
  StoredRun stored = ledger.run(run_id);
  EXPECT_EQ(stored.record.result_text, record.result_text);
  EXPECT_EQ(stored.record.seed, 17);
  EXPECT_EQ(stored.record.environment.at("CLOCKTRAIN_DEBUG_NANS"), "1");
  EXPECT_EQ(stored.record.run_dir, fs::canonical(dir / "run17"));
  EXPECT_EQ(*stored.provenance.command, "clocktrain run cpu-small --seed 17");
  EXPECT_DOUBLE_EQ(*stored.provenance.finished_unix, 400.0);
  // The queryable columns agree with result.json.
  Statement row(ledger.db(),
                "SELECT binary_version, build_flags, manifest_sha256, threads, devices, recipe_resolved_json, "
                "val_bpb, gate_eligible FROM runs WHERE id = ?1");
  row.bind(1, run_id);
  ASSERT_TRUE(row.step());
  EXPECT_EQ(row.column_text(0), "0.1.0+abc123");
  EXPECT_EQ(row.column_text(1), "GNU-12 Release -O3");
  EXPECT_EQ(row.column_text(2), std::string(64, 'b'));
  EXPECT_EQ(row.column_int(3), 2);
  EXPECT_EQ(row.column_int(4), 1);
  EXPECT_EQ(Json::parse(row.column_text(5))["model"]["n_layer"], 4);
  EXPECT_DOUBLE_EQ(row.column_double(6), 1.7);
  EXPECT_EQ(row.column_int(7), 1);
}

TEST(Ledger, BadResultFilesNameTheFieldAndRecordNothing) {
  ct::test::TempDir dir;
  fs::create_directories(dir / "broken");
  write_file_atomic(dir / "broken" / "result.json", R"({"format": "clocktrain-result/1", "name": "x", "seed": 1})");
  try {
    read_run_record(dir / "broken");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("result.json: missing field 'val_bpb'"), std::string::npos) << e.what();
  }
  write_file_atomic(dir / "broken" / "result.json", "{\"format\": ");
  EXPECT_THROW(read_run_record(dir / "broken"), Error);
  EXPECT_THROW(read_run_record(dir / "missing"), Error);
}

// Found by fuzz_run_record: nlohmann::json throws out_of_range, not parse_error, for a number
// beyond double, and it escaped read_run_record (and the ledger's stored JSON) as another type.
TEST(Ledger, NumbersBeyondDoubleAndDeepNestingAreNamed) {
  ct::test::TempDir dir;
  fs::create_directories(dir / "big");
  write_file_atomic(dir / "big" / "result.json", R"({"format": "clocktrain-result/1", "val_bpb": 1e999})");
  EXPECT_NE(error_of([&] { read_run_record(dir / "big"); }).find("result.json: invalid JSON"), std::string::npos);
  write_file_atomic(dir / "big" / "result.json", std::string(50000, '[') + std::string(50000, ']'));
  EXPECT_NE(error_of([&] { read_run_record(dir / "big"); }).find("nested deeper than"), std::string::npos);

  Ledger ledger(dir / "lab.sqlite", true);
  const int64_t id = ledger.add_experiment(sample_experiment());
  ledger.add_verdict(id, "inconclusive", Rung::probe, Json{{"effect", 0.0}});
  ledger.db().exec("UPDATE verdicts SET numbers_json = '{\"effect\": 1e999}'");
  const std::string message = error_of([&] { ledger.verdicts(); });
  EXPECT_NE(message.find("lab.sqlite: verdict 1: stored JSON is damaged: invalid JSON"), std::string::npos) << message;
}

TEST(Ledger, OlderSchemaIsMigratedWithItsDataKept) {
  ct::test::TempDir dir;
  auto path = dir / "old.sqlite";
  {
    // A version-1 ledger (the first layout) holding one experiment, one run and one verdict.
    SqliteDb db(path, true);
    Transaction t(db);
    apply_schema_steps(db, 0, 1);
    db.exec("PRAGMA application_id = " + std::to_string(kLedgerApplicationId));
    db.exec("INSERT INTO experiments(change, hypothesis, predicted_effect, predicted_low, predicted_high, rule, "
            "rule_json, confidence, created_unix) VALUES('lr 0.02 -> 0.03', 'higher lr converges faster', -0.004, "
            "-0.01, 0.0, 'accept if mean(B) - mean(A) < 0 at 90%', '{}', 0.9, 1700000000)");
    std::string result = test::result_json(ResultSpec{}, dir / "r").dump();
    Statement insert(db,
                     "INSERT INTO runs(experiment_id, arm, rung, seed, recipe_name, run_dir, result_json, "
                     "recipe_resolved_json, environment_json, val_bpb, gate_eligible, recorded_unix) "
                     "VALUES(1, 'A', 'full', 1, 'cpu-small', '/old/run', ?1, '{}', '{\"OMP_NUM_THREADS\":\"2\"}', 1.7, "
                     "1, 1700000100)");
    insert.bind(1, result).run();
    db.exec("INSERT INTO verdicts(experiment_id, verdict, rung, numbers_json, created_unix) "
            "VALUES(1, 'inconclusive', 'full', '{\"effect\": -0.001}', 1700000200)");
    t.commit();
    EXPECT_EQ(ledger_schema_version(db), 1);
  }
  Ledger ledger(path, false);
  EXPECT_EQ(ledger_schema_version(ledger.db()), kLedgerSchemaVersion);
  Experiment e = ledger.experiment(1);
  EXPECT_EQ(e.change, "lr 0.02 -> 0.03");
  EXPECT_DOUBLE_EQ(e.confidence, 0.9);
  EXPECT_DOUBLE_EQ(e.power, 0.8);  // the default the migration gives old experiments
  auto runs = ledger.runs(1);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].record.run_dir, fs::path("/old/run"));
  EXPECT_EQ(runs[0].record.environment.at("OMP_NUM_THREADS"), "2");
  EXPECT_FALSE(runs[0].provenance.command.has_value());
  auto verdicts = ledger.verdicts(1);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].verdict, "inconclusive");
  // The new tables work, and a backup of the version-1 file was kept.
  ledger.declare(1, {"recipe.train.lr"});
  EXPECT_EQ(ledger.experiment(1).declared.size(), 1u);
  ASSERT_TRUE(fs::exists(dir / "old.sqlite.v1.bak"));
  SqliteDb backup(dir / "old.sqlite.v1.bak", false);
  EXPECT_EQ(ledger_schema_version(backup), 1);
  EXPECT_EQ(backup.query_int("SELECT count(*) FROM runs"), 1);
}

TEST(Ledger, NewerSchemaIsRefusedAndLeftUntouched) {
  ct::test::TempDir dir;
  auto path = dir / "future.sqlite";
  {
    Ledger ledger(path, true);
    ledger.add_experiment(sample_experiment());
    ledger.db().exec("PRAGMA user_version = 99");
  }
  std::string before = read_file(path);
  std::string message = error_of([&] { Ledger ledger(path, false); });
  EXPECT_NE(message.find("schema version 99 is newer"), std::string::npos) << message;
  EXPECT_EQ(read_file(path), before);
}

TEST(Ledger, GarbageTruncatedAndForeignFilesAreRefused) {
  ct::test::TempDir dir;
  // Not SQLite at all.
  auto garbage = dir / "garbage.sqlite";
  write_file_atomic(garbage, std::string(8192, 'x'));
  std::string message = error_of([&] { Ledger ledger(garbage, false); });
  EXPECT_NE(message.find("garbage.sqlite"), std::string::npos) << message;
  EXPECT_NE(message.find("not a readable clocktrain ledger"), std::string::npos) << message;
  EXPECT_EQ(read_file(garbage), std::string(8192, 'x'));

  // A real ledger, cut short: the file ends mid-database.
  auto whole = dir / "whole.sqlite";
  {
    Ledger ledger(whole, true);
    int64_t id = ledger.add_experiment(sample_experiment());
    climb_to_full(ledger, id, dir.path());
    for (int i = 0; i < 40; ++i) {
      ResultSpec spec;
      spec.seed = i;
      ledger.add_run(id, "A", Rung::full, read_run_record(write_run(dir / ("run" + std::to_string(i)), spec)), {});
    }
  }
  std::string bytes = read_file(whole);
  ASSERT_GT(bytes.size(), 16384u);
  for (size_t keep : {bytes.size() / 2, size_t{4096 + 100}, size_t{60}}) {
    auto cut = dir / ("cut" + std::to_string(keep) + ".sqlite");
    write_file_atomic(cut, bytes.substr(0, keep));
    std::string error = error_of([&] {
      Ledger ledger(cut, false);
      ledger.runs();
    });
    EXPECT_NE(error, "") << "truncated to " << keep << " bytes was accepted";
    EXPECT_NE(error.find(cut.filename().string()), std::string::npos) << error;
    EXPECT_EQ(read_file(cut), bytes.substr(0, keep)) << "a damaged ledger was modified";
  }

  // Another program's SQLite file.
  auto foreign = dir / "foreign.sqlite";
  {
    SqliteDb db(foreign, true);
    db.exec("CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes(text) VALUES('mine')");
  }
  message = error_of([&] { Ledger ledger(foreign, false); });
  EXPECT_NE(message.find("not a clocktrain ledger"), std::string::npos) << message;
  {
    SqliteDb db(foreign, false);
    EXPECT_EQ(db.query_int("SELECT count(*) FROM notes"), 1);
    EXPECT_EQ(db.query_int("PRAGMA user_version"), 0);
  }

  // A missing ledger is not created by a read command.
  message = error_of([&] { Ledger ledger(dir / "absent.sqlite", false); });
  EXPECT_NE(message.find("lab propose"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "absent.sqlite"));
}

TEST(Ledger, FailedWriteLeavesNothingBehind) {
  ct::test::TempDir dir;
  Ledger ledger(dir / "lab.sqlite", true);
  int64_t id = ledger.add_experiment(sample_experiment());
  // A declaration with a bad key in the middle of a list: none of the list is stored.
  EXPECT_THROW(ledger.declare(id, {"recipe.model.n_layer", "bad key", "env.X"}), Error);
  EXPECT_TRUE(ledger.experiment(id).declared.empty());
}

}  // namespace
}  // namespace ct::lab
