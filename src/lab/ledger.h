#pragma once
// The ledger: one SQLite file per project folder (default ./lab.sqlite) that keeps every
// experiment (hypothesis first), every run with all of its inputs, the ladder checks, the declared
// differences between arms, and every verdict. Each write is one transaction; the schema and its
// migrations are in ledger_schema.h.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lab/decision_rule.h"
#include "lab/ladder.h"
#include "lab/run_record.h"
#include "lab/sqlite_db.h"

namespace ct::lab {

struct NewExperiment {
  std::string change;
  std::string hypothesis;
  double predicted_effect = 0;
  double predicted_low = 0, predicted_high = 0;
  std::string rule_text;
  std::optional<double> confidence;  // --confidence; the rule's "at C%" must agree when both are given
  double power = 0.8;
  std::vector<std::string> declared;  // --declare keys
};

struct Experiment {
  int64_t id = 0;
  std::string change, hypothesis;
  double predicted_effect = 0, predicted_low = 0, predicted_high = 0;
  std::string rule_text;
  DecisionRule rule;
  double confidence = 0.95;
  double power = 0.8;
  double created_unix = 0;
  std::vector<std::string> declared;
};

// How a run came to the ledger, besides its result.json.
struct RunProvenance {
  std::optional<std::string> command;  // the command line `lab run` launched (none for `lab add`)
  std::optional<int> exit_code;
  std::optional<double> started_unix, finished_unix;
};

struct StoredRun {
  int64_t id = 0;
  int64_t experiment_id = 0;
  std::string arm;
  Rung rung = Rung::full;
  RunRecord record;
  RunProvenance provenance;
  double recorded_unix = 0;
  std::optional<std::string> excluded_reason;  // set by lab exclude: kept, but out of every statistic
};

struct LadderCheck {
  int64_t id = 0;
  int64_t experiment_id = 0;
  std::optional<std::string> arm;
  Rung rung = Rung::cpu_check;
  std::string command;
  int exit_code = 0;
  bool passed = false;
  std::string output_tail;
  double started_unix = 0, finished_unix = 0;
};

struct StoredVerdict {
  int64_t id = 0;
  int64_t experiment_id = 0;
  std::string verdict;  // accept | reject | inconclusive
  Rung rung = Rung::full;
  Json numbers;
  double created_unix = 0;
};

class Ledger {
 public:
  // Opens the ledger; `create` allows making a new file (lab propose), otherwise a missing file is
  // an error that says how to start one.
  Ledger(const std::filesystem::path& path, bool create);

  const std::filesystem::path& path() const { return db_->path(); }

  int64_t add_experiment(const NewExperiment& experiment);
  // Throws naming the ledger when there is no experiment `id`.
  Experiment experiment(int64_t id);
  std::vector<Experiment> experiments();
  // Adds keys to the experiment's declared changes (kept with the time they were declared).
  void declare(int64_t experiment_id, const std::vector<std::string>& keys);

  // Records a run after checking, in the same transaction: the experiment exists and has a
  // hypothesis, the arm is one the rule names, the rung is not cpu-check, the rung below passed,
  // and the run folder is not already recorded in this experiment.
  int64_t add_run(int64_t experiment_id, const std::string& arm, Rung rung, const RunRecord& run,
                  const RunProvenance& provenance);
  // The checks add_run makes, without writing (lab run calls it before launching anything).
  void check_run_allowed(int64_t experiment_id, const std::string& arm, Rung rung);
  StoredRun run(int64_t id);
  // Takes a run out of every statistic and verdict (it stays in the ledger, with the reason).
  void exclude_run(int64_t id, const std::string& reason);
  std::vector<StoredRun> runs(std::optional<int64_t> experiment_id = std::nullopt);

  int64_t add_check(const LadderCheck& check);
  std::vector<LadderCheck> checks(int64_t experiment_id);

  int64_t add_verdict(int64_t experiment_id, const std::string& verdict, Rung rung, const Json& numbers);
  std::vector<StoredVerdict> verdicts(std::optional<int64_t> experiment_id = std::nullopt);

  // True when some run or check of the experiment passed `rung` (ladder.h).
  bool rung_passed(int64_t experiment_id, Rung rung);

  SqliteDb& db() { return *db_; }

 private:
  void check_allowed_locked(const Experiment& experiment, const std::string& arm, Rung rung);
  std::unique_ptr<SqliteDb> db_;
};

// "lab.sqlite" in the current folder unless --ledger names another file.
std::filesystem::path default_ledger_path();

}  // namespace ct::lab
