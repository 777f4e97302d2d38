// lab propose, declare, run, add, check: the commands that write to the ledger.
#include <sys/stat.h>
#include <unistd.h>


#include "harness/environment.h"
#include "lab/child_process.h"
#include "lab/formatting.h"
#include "lab/lab_commands.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/files.h"
#include "util/text_table.h"

namespace ct::lab {

namespace {

// Modification time of a file in Unix seconds, or -1 when it does not exist.
double modified_unix(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return -1;
  return static_cast<double>(info.st_mtim.tv_sec) + 1e-9 * static_cast<double>(info.st_mtim.tv_nsec);
}

// The run folder that `clocktrain run --out DIR` produced: DIR itself when it holds a fresh
// result.json, otherwise the newest direct sub-folder that does (the harness may treat --out as
// the parent of a named run folder). Only files written after the launch count.
std::optional<fs::path> find_produced_run(const fs::path& out_dir, double started_unix) {
  // File times can lag the wall clock by a filesystem tick; allow a second.
  double not_before = started_unix - 1.0;
  if (modified_unix(out_dir / "result.json") >= not_before) return out_dir;
  std::optional<fs::path> newest;
  double newest_time = not_before;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
    if (!entry.is_directory()) continue;
    double t = modified_unix(entry.path() / "result.json");
    if (t >= newest_time) {
      newest_time = t;
      newest = entry.path();
    }
  }
  return newest;
}

// The --out value among the run options, when the user gave one.
std::optional<std::string> out_option(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--out" && i + 1 < args.size()) return args[i + 1];
    if (args[i].starts_with("--out=")) return args[i].substr(6);
  }
  return std::nullopt;
}

std::string default_out_dir(const RunOptions& o) {
  return str("runs/lab/e", o.experiment, "-", o.arm, "-", rung_name(o.rung), "-", utc_text(unix_seconds(), "%Y%m%d-%H%M%S"), "-",
             ::getpid());
}

void print_recorded(std::ostream& out, int64_t id, const StoredRun& run) {
  out << "run " << id << " recorded: experiment " << run.experiment_id << ", arm " << run.arm << ", rung "
      << rung_name(run.rung) << ", seed " << run.record.seed << ", val_bpb "
      << format_optional(run.record.val_bpb, 4) << ", gate " << (run.record.gate_eligible ? "eligible" : "NOT eligible")
      << ", rung " << (run_passes_rung(run.record, run.rung, run.provenance.exit_code) ? "passed" : "NOT passed")
      << "\n  " << run.record.run_dir.string() << "\n";
}

}  // namespace

int64_t lab_propose(const fs::path& ledger_path, const NewExperiment& experiment, std::ostream& out) {
  Ledger ledger(ledger_path, /*create=*/true);
  int64_t id = ledger.add_experiment(experiment);
  Experiment e = ledger.experiment(id);
  out << id << "\n";
  out << "experiment " << id << " opened in " << ledger_path.string() << "\n"
      << "  rule: " << e.rule.canonical(e.confidence) << " (power " << e.power << ")\n"
      << "  arms: " << e.rule.control_arm << " (control), " << e.rule.treatment_arm << " (treatment)\n";
  if (!e.declared.empty()) {
    out << "  declared changes:";
    for (const auto& key : e.declared) out << " " << key;
    out << "\n";
  }
  return id;
}

void lab_declare(const fs::path& ledger_path, int64_t experiment, const std::vector<std::string>& keys,
                 std::ostream& out) {
  check(!keys.empty(), "lab declare: name at least one difference key");
  Ledger ledger(ledger_path, false);
  ledger.declare(experiment, keys);
  Experiment e = ledger.experiment(experiment);
  out << "experiment " << experiment << " declared changes:";
  for (const auto& key : e.declared) out << " " << key;
  out << "\n";
}

int64_t lab_run(const RunOptions& o, std::ostream& out) {
  check(!o.run_args.empty() && !o.run_args.front().starts_with("-"),
        "lab run: give the recipe after --: clocktrain lab run EXP --arm A -- RECIPE [run options]");
  const Rung rung = o.rung;
  {
    // Refuse before spending any compute; the ledger is not held open while the run trains.
    Ledger ledger(o.ledger, false);
    ledger.check_run_allowed(o.experiment, o.arm, rung);
  }
  fs::path binary = o.binary ? *o.binary : current_executable();
  std::vector<std::string> argv = {binary.string(), "run"};
  argv.insert(argv.end(), o.run_args.begin(), o.run_args.end());
  fs::path out_dir;
  if (auto given = out_option(o.run_args)) {
    out_dir = *given;
  } else {
    out_dir = default_out_dir(o);
    argv.push_back("--out");
    argv.push_back(out_dir.string());
  }
  // The same filter the harness applies to result.json's environment (harness/environment.h).
  auto captured = ct::capture_environment();
  out << "lab run: " << shell_join(argv) << "\n" << std::flush;
  ChildResult child = run_child(argv, 0);
  auto produced = find_produced_run(out_dir, child.started_unix);
  check(produced.has_value(), "lab run: `", shell_join(argv), "` exited with status ", child.exit_code,
        " and wrote no result.json under ", out_dir.string(), "; nothing was recorded");
  RunRecord record = read_run_record(*produced);
  // The run's own account of its environment wins; the lab's capture adds what it did not list.
  for (const auto& [name, value] : captured) record.environment.emplace(name, value);

  RunProvenance provenance;
  provenance.command = shell_join(argv);
  provenance.exit_code = child.exit_code;
  provenance.started_unix = child.started_unix;
  provenance.finished_unix = child.finished_unix;
  Ledger ledger(o.ledger, false);
  int64_t id = ledger.add_run(o.experiment, o.arm, rung, record, provenance);
  if (child.exit_code != 0) out << "note: the run exited with status " << child.exit_code << "\n";
  print_recorded(out, id, ledger.run(id));
  return id;
}

std::vector<int64_t> lab_add(const fs::path& ledger_path, int64_t experiment, const std::string& arm,
                             Rung rung, const std::vector<fs::path>& run_dirs, std::ostream& out) {
  check(!run_dirs.empty(), "lab add: name at least one run folder");
  Ledger ledger(ledger_path, false);
  std::vector<int64_t> ids;
  for (const auto& dir : run_dirs) {
    RunRecord record = read_run_record(dir);
    int64_t id = ledger.add_run(experiment, arm, rung, record, RunProvenance{});
    print_recorded(out, id, ledger.run(id));
    ids.push_back(id);
  }
  return ids;
}

void lab_exclude(const fs::path& ledger_path, int64_t run, const std::string& reason, std::ostream& out) {
  Ledger ledger(ledger_path, false);
  ledger.exclude_run(run, reason);
  out << "run " << run << " excluded from statistics and verdicts: " << reason << "\n";
}

int lab_check(const CheckOptions& o, std::ostream& out) {
  check(!o.command.empty(), "lab check: give the check command after --: clocktrain lab check EXP -- ctest -R model");
  const Rung rung = o.rung;
  check(rung == Rung::cpu_check || rung == Rung::probe, "lab check: records the cpu-check or probe rung, not ",
        rung_name(rung));
  {
    Ledger ledger(o.ledger, false);
    Experiment e = ledger.experiment(o.experiment);
    if (auto below = previous_rung(rung))
      check(ledger.rung_passed(e.id, *below), "experiment ", e.id, ": rung ", rung_name(rung), " needs a passed ",
            rung_name(*below), " first");
  }
  out << "lab check: " << shell_join(o.command) << "\n" << std::flush;
  ChildResult child = run_child(o.command, 8000);
  LadderCheck record;
  record.experiment_id = o.experiment;
  record.arm = o.arm;
  record.rung = rung;
  record.command = shell_join(o.command);
  record.exit_code = child.exit_code;
  record.passed = child.exit_code == 0;
  record.output_tail = child.output_tail;
  record.started_unix = child.started_unix;
  record.finished_unix = child.finished_unix;
  Ledger ledger(o.ledger, false);
  int64_t id = ledger.add_check(record);
  out << "check " << id << " recorded: experiment " << o.experiment << ", rung " << rung_name(rung) << ", "
      << (record.passed ? "passed" : "FAILED") << " (exit status " << child.exit_code << ", "
      << format_fixed(child.finished_unix - child.started_unix, 1) << " s)\n";
  return child.exit_code;
}

}  // namespace ct::lab
