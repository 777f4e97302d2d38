#pragma once
// The correctness gate of docs/harness.md: each check is a pure function from the evidence that the
// trainer, the evaluator and the harness collected to a verdict {name, passed, evidence text}.
// The evidence text says what was measured, so a reader of result.json can judge it without logs.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/result.h"

namespace ct {

// What a round demands beyond the recipe's own figures (docs/harness.md).
// Round 2 (docs/harness.md): a 4-hour budget, every device of the machine (full_machine, as in round 1) and
// the full CORE within the timeout. A practice run (`clocktrain run --practice`, marked so in
// result.json and never ranked with real runs) may take a shorter budget and a CORE subset.
struct GateRules {
  int round = 1;
  double core_timeout_seconds = 3600;  // round 2: CORE must finish within this
  bool practice = false;
};
GateRules rules_for_round(int round);

// The recipe defaults a round implies, for `clocktrain run` to apply.
inline constexpr double kRound1BudgetSeconds = 1800;
inline constexpr double kRound2BudgetSeconds = 4 * 3600;
inline constexpr double kDefaultStartupCapSeconds = 900;

// Where the initial weights came from.
struct InitSource {
  enum class Kind { unknown, seed, file };
  Kind kind = Kind::unknown;
  uint64_t seed = 0;
  std::string file;  // for Kind::file: the file read
  static InitSource from_seed(uint64_t seed) { return {Kind::seed, seed, {}}; }
  static InitSource from_file(std::string path) { return {Kind::file, 0, std::move(path)}; }
};

// Filled by the trainer (and the harness around it).
struct TrainEvidence {
  // time
  double train_clock_seconds = 0;
  double budget_seconds = 0;
  double startup_seconds = 0;
  double startup_cap_seconds = kDefaultStartupCapSeconds;
  // valid_score: losses (train and held-out) that were NaN or Inf, and non-finite events logged
  // (count_nonfinite_losses() of metrics.h gives it from metrics.jsonl).
  int64_t nonfinite_loss_events = 0;
  // full_machine
  std::string backend;          // "cpu" or a device backend ("cuda")
  int64_t threads_used = 0;     // CPU: OpenMP threads of the training loop
  int64_t cores_available = 0;  // CPU: CPUs the job's processes may run on (their affinity masks' union)
  int64_t machine_cpus = 0;     // CPU: CPUs the machine was given (util/threads.h machine_cpus)
  std::string machine_cpus_how; // what that count came from ("2 CPUs online", "cgroup cpuset 0-3", ...)
  int64_t devices_used = 0;     // device backends: devices the run trained on
  int64_t devices_present = 0;  // device backends: the machine's devices (Backend::devices_present)
  std::string devices_present_how;  // where that count came from (NVML, nvidia-smi -L, ...)
  // data
  std::vector<ShardRead> shards_read;        // as the loader hashed them while reading
  std::vector<std::string> files_opened;     // ReadGuard::opened() of the trainer's guard
  std::vector<std::string> refused_opens;    // ReadGuard::refused(): attempts the guard stopped
  InitSource init;
};

// Filled by the evaluator (and the harness around it).
struct EvalEvidence {
  std::string saved_checkpoint_sha256;      // hashed by the harness right after the trainer saved it
  std::string evaluated_checkpoint_sha256;  // hashed by the evaluator from the bytes it loaded
  std::string evaluator;                    // identity, e.g. "clocktrain 0.1.0+abc eval::bpb"
  std::optional<double> val_bpb;            // as the evaluator computed it (NaN allowed: valid_score fails)
  // CORE, when it ran: computed from the same checkpoint, and how long it took; the rows and tasks it
  // covered (max_per_task 0 = every row; task_subset = only some tasks).
  bool core_ran = false;
  int64_t core_max_per_task = 0;
  bool core_task_subset = false;
  std::string core_checkpoint_sha256;
  std::optional<double> core;
  double core_seconds = 0;
  // Files the evaluator opened and the folders it may read (checkpoint, val/, eval_bundle/, the
  // tokenizer). Both empty: not recorded, and the check says so.
  std::vector<std::string> files_opened;
  std::vector<std::string> allowed_roots;
  // Figures the trainer logged, shown for information only; never used as the score.
  std::optional<double> trainer_last_train_loss;
  std::optional<double> trainer_last_heldout_loss;
};

// The pinned data the run was prepared against.
struct DataPins {
  std::string manifest_sha256;
  std::map<std::string, std::string> shard_sha256;  // shard name -> SHA-256 in the manifest
  std::vector<std::string> forbidden_roots;         // val/ and eval_bundle/: the trainer guard's
                                                    // forbidden_roots(), canonical paths
};

// Round 2 (not practice) also requires the round's 4-hour budget.
GateCheck check_time(const TrainEvidence& train, const GateRules& rules = {});
GateCheck check_valid_score(const TrainEvidence& train, const EvalEvidence& eval);
GateCheck check_trusted_evaluation(const EvalEvidence& eval);
GateCheck check_full_machine(const TrainEvidence& train);
GateCheck check_data(const TrainEvidence& train, const DataPins& pins);
// CORE finished within the timeout, on every row of every task (a subset passes only in practice).
GateCheck check_core_time(const EvalEvidence& eval, const GateRules& rules);

// Every check of the round, in the order of docs/run-records.md; eligible when all passed.
GateVerdict run_gate(const TrainEvidence& train, const EvalEvidence& eval, const DataPins& pins,
                     const GateRules& rules);

}  // namespace ct
