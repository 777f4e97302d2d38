#include "harness/gate.h"

#include <cmath>

#include "util/error.h"
#include "util/read_guard.h"
#include "util/text_format.h"

namespace ct {

namespace {

// "a; b; c and 4 more": a failing check names its first few culprits, never thousands.
std::string list_some(const std::vector<std::string>& items, size_t max_items = 3) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) out += (i ? "; " : "") + items[i];
  if (items.size() > max_items) out += str(" and ", items.size() - max_items, " more");
  return out;
}

std::string short_sha(const std::string& sha) { return sha.size() > 12 ? sha.substr(0, 12) + "..." : sha; }

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool under_any(const std::string& path, const std::vector<std::string>& roots) {
  std::filesystem::path p(path);
  for (const auto& r : roots)
    if (path_is_under(p, std::filesystem::path(r))) return true;
  return false;
}

std::string joined(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace

GateRules rules_for_round(int round) {
  check(round == 1 || round == 2, "round: expected 1 or 2, got ", round);
  GateRules rules;
  rules.round = round;
  return rules;
}

GateCheck check_time(const TrainEvidence& t, const GateRules& rules) {
  GateCheck c{kCheckTime, false, ""};
  bool finite = std::isfinite(t.train_clock_seconds) && std::isfinite(t.budget_seconds) &&
                std::isfinite(t.startup_seconds) && std::isfinite(t.startup_cap_seconds);
  bool clock_ok = finite && t.budget_seconds > 0 && t.train_clock_seconds <= t.budget_seconds;
  bool startup_ok = finite && t.startup_seconds <= t.startup_cap_seconds;
  const bool round_budget = rules.round != 2 || rules.practice || t.budget_seconds == kRound2BudgetSeconds;
  c.passed = clock_ok && startup_ok && round_budget;
  if (!std::isfinite(t.train_clock_seconds) || !std::isfinite(t.startup_seconds))
    c.evidence = str("no training clock: the trainer did not return (budget ", format_seconds(t.budget_seconds),
                     ", startup cap ", format_seconds(t.startup_cap_seconds), ")");
  else
    c.evidence = str("clock ", format_seconds(t.train_clock_seconds), (clock_ok ? " <= " : " > "), "budget ",
                     format_seconds(t.budget_seconds), "; startup ", format_seconds(t.startup_seconds),
                     (startup_ok ? " <= " : " > "), "cap ", format_seconds(t.startup_cap_seconds));
  if (!round_budget)
    c.evidence += str("; round 2 requires the budget of ", format_seconds(kRound2BudgetSeconds),
                      " (a shorter run is a practice run: clocktrain run --practice)");
  if (rules.practice) c.evidence += "; a practice run";
  return c;
}

GateCheck check_valid_score(const TrainEvidence& t, const EvalEvidence& e) {
  GateCheck c{kCheckValidScore, false, ""};
  bool bpb_ok = e.val_bpb && std::isfinite(*e.val_bpb);
  bool losses_ok = t.nonfinite_loss_events == 0;
  c.passed = bpb_ok && losses_ok;
  std::string bpb = !e.val_bpb ? "val_bpb was not computed"
                    : bpb_ok   ? str("val_bpb ", format_fixed(*e.val_bpb, 4), " is finite")
                               : str("val_bpb is ", format_number(*e.val_bpb));
  std::string losses = losses_ok ? "no NaN or Inf loss during training"
                                 : str(t.nonfinite_loss_events, " NaN or Inf loss value(s) during training");
  c.evidence = bpb + "; " + losses;
  return c;
}

GateCheck check_trusted_evaluation(const EvalEvidence& e) {
  GateCheck c{kCheckTrustedEvaluation, false, ""};
  std::vector<std::string> problems;
  if (e.evaluator.empty()) problems.push_back("the evaluator's identity was not recorded");
  if (!e.val_bpb) problems.push_back("the evaluator produced no val_bpb");
  if (!is_sha256_hex(e.saved_checkpoint_sha256)) problems.push_back("the saved checkpoint's SHA-256 was not recorded");
  if (e.evaluated_checkpoint_sha256 != e.saved_checkpoint_sha256)
    problems.push_back(str("val_bpb was computed from checkpoint ", short_sha(e.evaluated_checkpoint_sha256),
                           ", not the saved one ", short_sha(e.saved_checkpoint_sha256)));
  if (e.core_ran && e.core_checkpoint_sha256 != e.saved_checkpoint_sha256)
    problems.push_back(str("CORE was computed from checkpoint ", short_sha(e.core_checkpoint_sha256),
                           ", not the saved one ", short_sha(e.saved_checkpoint_sha256)));
  std::string reads;
  if (e.allowed_roots.empty() && e.files_opened.empty()) {
    reads = "the evaluator's file reads were not recorded";
  } else {
    std::vector<std::string> outside;
    for (const auto& f : e.files_opened)
      if (!under_any(f, e.allowed_roots)) outside.push_back(f);
    if (outside.empty()) {
      reads = str("the evaluator read ", e.files_opened.size(), " file(s), all under ", joined(e.allowed_roots, ", "));
    } else {
      problems.push_back(str("the evaluator read ", outside.size(), " file(s) outside the checkpoint and the pinned data: ",
                             list_some(outside)));
    }
  }
  std::string info;
  if (e.trainer_last_train_loss) info += str("trainer's last train loss ", format_fixed(*e.trainer_last_train_loss, 4));
  if (e.trainer_last_heldout_loss)
    info += str(info.empty() ? "" : ", ", "trainer's last held-out loss ", format_fixed(*e.trainer_last_heldout_loss, 4));
  if (!info.empty()) info += " (information only, not the score)";

  c.passed = problems.empty();
  if (c.passed) {
    c.evidence = str(e.core_ran ? "val_bpb and CORE" : "val_bpb", " recomputed by ", e.evaluator,
                     " from the saved checkpoint (sha256 ", short_sha(e.saved_checkpoint_sha256), ")");
    if (!reads.empty()) c.evidence += "; " + reads;
  } else {
    c.evidence = list_some(problems, problems.size());
  }
  if (!info.empty()) c.evidence += "; " + info;
  return c;
}

GateCheck check_full_machine(const TrainEvidence& t) {
  GateCheck c{kCheckFullMachine, false, ""};
  if (t.backend.empty()) {
    c.evidence = "the backend was not recorded";
  } else if (t.backend == "cpu") {
    // Every CPU the machine was given, not only those an affinity mask (taskset, a launcher's binding)
    // left this process: the job must be able to run on all of them, with a thread for each (more
    // threads than a container's CPU quota, as the default gives there, still use every CPU it has).
    c.passed = t.machine_cpus > 0 && t.threads_used >= t.machine_cpus && t.cores_available >= t.machine_cpus;
    c.evidence = str("cpu: ", t.threads_used, " thread(s) used of ", t.machine_cpus, " CPU(s) on the machine (",
                     t.machine_cpus_how, "); the job may run on ", t.cores_available);
    if (t.cores_available < t.machine_cpus) c.evidence += " (its affinity: taskset or the launcher's binding)";
  } else {
    c.passed = t.devices_present > 0 && t.devices_used == t.devices_present;
    c.evidence = str(t.backend, ": ", t.devices_used, " device(s) used of ", t.devices_present, " present");
    if (!t.devices_present_how.empty()) c.evidence += " (" + t.devices_present_how + ")";
  }
  return c;
}

GateCheck check_data(const TrainEvidence& t, const DataPins& pins) {
  GateCheck c{kCheckData, false, ""};
  std::vector<std::string> problems;
  if (!is_sha256_hex(pins.manifest_sha256)) problems.push_back("the pinned manifest's SHA-256 was not recorded");
  if (t.shards_read.empty()) problems.push_back("no training shard was recorded as read");
  std::vector<std::string> bad_shards;
  for (const auto& s : t.shards_read) {
    auto it = pins.shard_sha256.find(s.name);
    if (it == pins.shard_sha256.end())
      bad_shards.push_back(str(s.name, " is not in the manifest"));
    else if (it->second != s.sha256)
      bad_shards.push_back(str(s.name, " has sha256 ", short_sha(s.sha256), ", the manifest says ", short_sha(it->second)));
  }
  if (!bad_shards.empty()) problems.push_back(list_some(bad_shards));
  if (pins.forbidden_roots.empty()) problems.push_back("the forbidden folders (val/, eval_bundle/) were not given");
  std::vector<std::string> forbidden_reads;
  for (const auto& f : t.files_opened)
    if (under_any(f, pins.forbidden_roots)) forbidden_reads.push_back(f);
  if (!forbidden_reads.empty())
    problems.push_back(str("the trainer opened ", forbidden_reads.size(), " forbidden file(s): ", list_some(forbidden_reads)));
  if (!t.refused_opens.empty())
    problems.push_back(str("the trainer tried to open ", t.refused_opens.size(), " forbidden file(s): ", list_some(t.refused_opens)));
  std::string init;
  switch (t.init.kind) {
    case InitSource::Kind::seed: init = str("weights initialised from seed ", t.init.seed); break;
    case InitSource::Kind::file: problems.push_back(str("weights were loaded from a file (", t.init.file, ")")); break;
    case InitSource::Kind::unknown: problems.push_back("the weights' initialisation was not recorded"); break;
  }
  c.passed = problems.empty();
  if (c.passed) {
    c.evidence = str(t.shards_read.size(), " shard(s) read, each listed in manifest ", short_sha(pins.manifest_sha256),
                     " with the same SHA-256; ", t.files_opened.size(), " file(s) opened by the trainer, none under ",
                     joined(pins.forbidden_roots, " or "), "; ", init);
  } else {
    c.evidence = list_some(problems, problems.size());
  }
  return c;
}

GateCheck check_core_time(const EvalEvidence& e, const GateRules& rules) {
  GateCheck c{kCheckCoreTime, false, ""};
  if (!e.core_ran || !e.core) {
    c.evidence = str("CORE did not finish (round ", rules.round, " requires it within ",
                     format_seconds(rules.core_timeout_seconds), ")");
    return c;
  }
  bool in_time = std::isfinite(e.core_seconds) && e.core_seconds <= rules.core_timeout_seconds;
  const bool full = e.core_max_per_task == 0 && !e.core_task_subset;
  c.passed = in_time && std::isfinite(*e.core) && (full || rules.practice);
  c.evidence = str("CORE ", format_fixed(*e.core, 4), " in ", format_seconds(e.core_seconds),
                   (in_time ? " <= " : " > "), "timeout ", format_seconds(rules.core_timeout_seconds));
  if (!full) {
    c.evidence += str("; on a subset (", e.core_max_per_task > 0 ? str("--max-per-task ", e.core_max_per_task) : "",
                      e.core_max_per_task > 0 && e.core_task_subset ? ", " : "", e.core_task_subset ? "--tasks" : "",
                      ")");
    c.evidence += rules.practice ? ", allowed in a practice run" : ": round 2 requires the full CORE";
  }
  return c;
}

GateVerdict run_gate(const TrainEvidence& train, const EvalEvidence& eval, const DataPins& pins,
                     const GateRules& rules) {
  GateVerdict v;
  v.checks.push_back(check_time(train, rules));
  v.checks.push_back(check_valid_score(train, eval));
  v.checks.push_back(check_trusted_evaluation(eval));
  v.checks.push_back(check_full_machine(train));
  v.checks.push_back(check_data(train, pins));
  if (rules.round == 2) v.checks.push_back(check_core_time(eval, rules));
  v.eligible = v.failed_checks().empty();
  return v;
}

}  // namespace ct
