#include "harness/run_pipeline.h"

#include <algorithm>
#include <cmath>
#include <csignal>

#include "backend/parallel/launch.h"
#include "backend/parallel/process_group.h"
#include "eval/core_bundle.h"
#include "harness/data_cache.h"
#include "harness/environment.h"
#include "harness/evaluation_step.h"
#include "harness/gate.h"
#include "harness/metrics.h"
#include "harness/report.h"
#include "clocktrain_version.h"
#include "model/checkpoint.h"
#include "train/metrics_writer.h"
#include "train/recipe.h"
#include "train/recipe_overrides.h"
#include "train/run_folder.h"
#include "train/trainer.h"
#include "util/clock.h"
#include "util/data_dir.h"
#include "util/error.h"
#include "util/files.h"
#include "util/read_guard.h"
#include "util/sha256.h"
#include "util/text_format.h"
#include "util/threads.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

// The recipe as this run resolves it: the file, then the command line and the round's rules.
Recipe resolve_recipe(const RunPipelineOptions& o) {
  Recipe r = load_recipe(o.recipe_path);
  RecipeOverrides overrides;
  overrides.budget_seconds = o.budget_seconds;
  // Round 2 trains 4 hours; a practice run keeps the recipe's own budget (or steps) unless --budget.
  if (!overrides.budget_seconds && o.round == 2 && !o.practice) overrides.budget_seconds = kRound2BudgetSeconds;
  overrides.seed = o.seed;
  overrides.threads = o.threads;
  apply_recipe_overrides(r, overrides, o.recipe_path.string() + " (with the options of clocktrain run)");
  return r;
}

struct Training {
  TrainResult result;
  bool returned = false;  // train() returned (it did not throw in set-up)
  std::string error;      // the trainer's error, thrown or returned
};

Training run_training(const Recipe& recipe, Backend& backend, const PreparedData& prepared, const fs::path& run_dir,
                      const RunPipelineOptions& o, ReadGuard& guard, std::ostream& log) {
  Training t;
  TrainOptions options;
  options.recipe = recipe;
  options.backend = &backend;
  options.data_dir = prepared.dir;
  options.out_dir = run_dir;
  options.progress_line = o.progress;
  options.log_every_seconds = o.log_every_seconds;
  options.log_every_steps = o.log_every_steps;
  options.read_guard = &guard;
  log << "train: recipe " << recipe.name << " (" << recipe_hash(recipe).substr(0, 12) << "), "
      << (recipe.timed() ? str("budget ", format_seconds(recipe.budget_seconds)) : str(recipe.steps, " steps"))
      << ", into " << run_dir.string() << "\n";
  if (const std::string derived = depth_summary(recipe); !derived.empty()) log << "train: recipe " << derived << "\n";
  log << std::flush;
  try {
    t.result = train(options);
    t.returned = true;
    t.error = t.result.error;
  } catch (const std::exception& e) {
    t.error = e.what();
  }
  if (t.returned)
    log << "train: stopped (" << stop_reason_name(t.result.stop_reason) << ") after " << t.result.steps << " steps, " << t.result.tokens
        << " tokens, clock " << format_seconds(t.result.train_clock_seconds) << " (startup "
        << format_seconds(t.result.startup_seconds) << ")\n";
  if (!t.error.empty()) log << "train: FAILED: " << t.error << "\n";
  log << std::flush;
  return t;
}

// Every process of the job waits here until all have arrived (a sum of nothing).
void wait_for_every_process(ProcessGroup& processes) {
  std::vector<double> nothing{0.0};
  processes.all_reduce_sum(nothing);
}

// The cores that the job's processes may run on, together: the union of their affinity masks
// (with mpirun's default binding each process sees only its own cores). Counted by CPU id, so this
// is the machine's count when every process runs on one machine (docs/parallel.md).
int64_t cores_of_the_job(ProcessGroup* processes) {
  if (processes == nullptr) return available_cores();
  constexpr int kCpuIds = 4096;
  std::vector<double> allowed(kCpuIds, 0.0);
  for (int id : available_core_ids())
    if (id < kCpuIds) allowed[static_cast<size_t>(id)] = 1.0;
  processes->all_reduce_sum(allowed);
  return std::count_if(allowed.begin(), allowed.end(), [](double n) { return n > 0; });
}

TrainEvidence train_evidence(const Recipe& recipe, const Backend& backend, const Training& t, const ReadGuard& guard,
                             std::optional<int64_t> logged_nonfinite, int64_t job_cores) {
  TrainEvidence e;
  const TrainResult& r = t.result;
  // A trainer that threw reported no clock: missing evidence fails the time check (NaN is not <= anything).
  e.train_clock_seconds = t.returned ? r.train_clock_seconds : std::nan("");
  e.budget_seconds = recipe.budget_seconds;  // a run by steps is judged against its recipe's budget too
  e.startup_seconds = t.returned ? r.startup_seconds : std::nan("");
  e.startup_cap_seconds = recipe.startup_cap_seconds;
  e.nonfinite_loss_events = std::max<int64_t>(logged_nonfinite.value_or(0), r.nonfinite_steps);
  e.backend = r.backend;
  // Data parallel: every process's threads or devices (the same count in each), against the
  // machine's cores (the job's affinity union) or devices.
  if (r.backend == "cpu") {
    e.threads_used = static_cast<int64_t>(r.threads) * backend.world_size();
    e.cores_available = job_cores;
    const MachineCpus machine = machine_cpus();
    e.machine_cpus = machine.count;
    e.machine_cpus_how = machine.how;
  } else if (t.returned) {
    e.devices_used = static_cast<int64_t>(backend.device_count()) * backend.world_size();
    e.devices_present = backend.devices_present();
    e.devices_present_how = backend.devices_present_how();
  }
  for (const auto& [name, sha] : r.shards_read) e.shards_read.push_back({name, sha});
  e.files_opened = guard.opened();
  e.refused_opens = guard.refused();
  // The pipeline never resumes: a trainer that returned initialised the weights from the seed.
  if (t.returned && r.resumed_from.empty()) e.init = InitSource::from_seed(r.seed);
  return e;
}

DataPins data_pins(const PreparedData& prepared, const ReadGuard& guard) {
  DataPins pins;
  pins.manifest_sha256 = prepared.pinned_manifest_sha256;
  for (const auto& s : prepared.pinned.shards) pins.shard_sha256[s.name] = s.sha256;
  for (const auto& root : guard.forbidden_roots()) pins.forbidden_roots.push_back(root.path.string());
  return pins;
}

// The fields of result.json that every run has, whatever it got to.
void fill_run_identity(RunResult& r, const RunPipelineOptions& o, const Recipe& recipe, const fs::path& run_dir) {
  r.name = recipe.name;
  r.recipe = {o.recipe_path.string(), recipe_hash(recipe), to_json(recipe)};
  r.seed = recipe.seed;
  r.round = o.round;
  r.practice = o.practice;
  r.budget_seconds = recipe.budget_seconds;
  r.startup_cap_seconds = recipe.startup_cap_seconds;
  r.binary = current_binary();
  r.environment = capture_environment();
  r.run_dir = run_dir.string();
  r.created_unix = unix_seconds();
  if (!o.plan.is_null()) r.extra["plan"] = o.plan;  // `clocktrain run --plan`: what the recipe came from
}

// A run whose backend could not start: result.json records why (the gate, with no evidence, fails
// every check) and nothing else is written; the error is thrown on, naming the record.
[[noreturn]] void record_failed_start(const RunPipelineOptions& o, const Recipe& recipe, const GateRules& rules,
                                      RunOutcome& out, const std::string& error) {
  RunResult& r = out.result;
  fill_run_identity(r, o, recipe, out.run_dir);
  TrainEvidence no_training;
  no_training.train_clock_seconds = std::nan("");
  no_training.budget_seconds = recipe.budget_seconds;
  no_training.startup_seconds = std::nan("");
  no_training.backend = recipe.backend;
  r.gate = run_gate(no_training, EvalEvidence{}, DataPins{}, rules);
  r.device.backend = recipe.backend;
  r.device.description = "not started: " + error;
  r.device.threads = recipe.threads;
  r.extra["train_stop"] = Json{{"reason", "backend"}, {"error", error}};
  out.notes.push_back("backend: " + error);
  r.extra["notes"] = out.notes;
  ensure_directory(out.run_dir);
  out.result_path = out.run_dir / kResultFileName;
  write_result_file(out.result_path, r);
  fail(error, "\n(recorded in ", out.result_path.string(), "; nothing else was written)");
}

}  // namespace

RunOutcome run_pipeline(const RunPipelineOptions& o, std::ostream& log) {
  // Set-up: everything that can be refused before any compute is spent.
  GateRules rules = rules_for_round(o.round);
  rules.core_timeout_seconds = o.core_timeout_seconds;
  rules.practice = o.practice;
  check(o.core_timeout_seconds > 0, "--core-timeout: expected a positive number of seconds, got ",
        o.core_timeout_seconds);
  const Recipe recipe = resolve_recipe(o);
  const std::string recipe_text = read_file(o.recipe_path);
  const bool core = o.core || o.round == 2;
  const DataLayout layout{o.data.data_dir};
  check(fs::is_directory(layout.val()), layout.val().string(),
        ": missing: the evaluator scores val_bpb on the pinned validation documents (--data names the data folder)");
  if (core) check(fs::is_directory(layout.eval_bundle()), layout.eval_bundle().string(), ": missing: CORE needs the eval bundle");
  if (core && o.core_max_per_task > 0) {
    // A task's few shots come from its other rows: refused now, not after training and val_bpb.
    for (const CoreTaskSpec& task : load_core_bundle(layout.eval_bundle()).tasks)
      check(!task.data_present || o.core_max_per_task > task.num_fewshot, "--max-per-task ", o.core_max_per_task,
            ": task '", task.label, "' takes ", task.num_fewshot, " shots from its other rows, so it needs more than ",
            task.num_fewshot, " rows (give at least ", task.num_fewshot + 1, ")");
  }
  check(!o.evaluator_binary.empty(), "run: the evaluator binary was not given");
  // The tie-break's baseline: a refused one (a commit after the pinned baseline) fails now, not after
  // training; the lines are counted against this commit at the end (unknown, with the reason, when git
  // cannot resolve it).
  const fs::path source_dir = o.source_dir.empty() ? fs::path(kSourceDir) : o.source_dir;
  const ResolvedBaseline baseline = resolve_baseline(source_dir, o.baseline_revision);
  RunOutcome out;
  out.run_dir = o.out_dir.empty() ? fs::path("runs") / (recipe.name + "-" + utc_text(unix_seconds(), "%Y%m%d-%H%M%S")) : o.out_dir;
  // Data parallel: rank 0 writes the run folder (the others may start after it has begun there).
  const bool launched_rank0 = launched_as_rank0();
  RunFolderLock run_folder_lock;  // held to the end: the run folder is this process's to write
  if (launched_rank0) {
    // read-only checks first (a refusal writes nothing), then the lock, and the records again under it
    const auto check_unused = [&] {
      for (const char* name : {kResultFileName, kMetricsFileName})
        check(!fs::exists(out.run_dir / name), (out.run_dir / name).string(),
              ": the run folder already holds a run; choose a new --out");
    };
    RunFolderLock::of_existing(out.run_dir);
    check_unused();
    check_room_for_checkpoints(out.run_dir, recipe.model);
    check_writable_folder(out.run_dir, "--out");
    run_folder_lock = RunFolderLock(out.run_dir);
    check_unused();
  }
  log << "run: " << recipe.name << ", round " << o.round << ", " << out.run_dir.string() << "\n" << std::flush;

  // 0. The backend, made and probed before minutes go into data: a machine that cannot run the
  //    recipe (a precision without its engine, a missing library or device) fails here, in seconds.
  std::unique_ptr<Backend> backend;
  std::string backend_line;
  try {
    backend = create_recipe_backend(recipe);
    backend_line = backend_start_line(*backend);
  } catch (const std::exception& e) {
    if (launched_rank0) record_failed_start(o, recipe, rules, out, e.what());
    throw;
  }
  log << backend_line << "\n" << std::flush;
  // Data parallel (docs/parallel.md): rank 0 prepares the data while the others wait, then they
  // reuse its cache; every process trains; rank 0 alone evaluates and writes. The job's processes
  // meet through its process group, whatever the backend.
  ProcessGroup* const processes = ProcessGroup::of_this_job();
  const bool writer = backend->rank() == 0;
  if (!writer) wait_for_every_process(*processes);

  // 1. Data.
  DataCacheSettings cache = o.data;
  cache.vocab_size = static_cast<int32_t>(recipe.model.vocab_size);
  cache.threads = recipe.threads;
  cache.progress = o.progress;
  const PreparedData prepared = ensure_prepared_data(cache, log);
  if (writer && processes) wait_for_every_process(*processes);

  if (writer) {
    ensure_directory(out.run_dir);
    write_file_atomic(out.run_dir / kRecipeCopyFileName, recipe_text);
  }

  // 2. Training, every file it opens admitted by the guard.
  ReadGuard guard;
  guard.forbid_pinned_evaluation_data(layout);
  for (const auto& s : prepared.pinned.shards_of("val"))
    guard.forbid(prepared.dir / s.name, "a shard of the pinned validation set");
  const Training training = run_training(recipe, *backend, prepared, out.run_dir, o, guard, log);
  if (!training.error.empty()) out.notes.push_back("training: " + training.error);
  const int64_t job_cores = cores_of_the_job(processes);  // a collective: every process, before the others leave
  // The job's last collective is done: each process leaves it now, so that the others exit at once
  // instead of waiting in MPI_Finalize (which polls) until rank 0 has evaluated.
  if (processes) processes->finish();
  if (!writer) {
    check(training.error.empty(), "training (rank ", backend->rank(), "): ", training.error);
    out.speaks = false;
    out.run_dir.clear();
    return out;
  }

  // The checkpoint as saved, hashed before anything else can touch it.
  const fs::path checkpoint = out.run_dir / kCheckpointDir;
  std::string saved_sha256;
  if (training.returned && !training.result.checkpoint_dir.empty() && fs::exists(checkpoint / kModelWeightsFile))
    saved_sha256 = sha256_file(checkpoint / kModelWeightsFile);

  // 3. The trusted evaluation, in separate processes; not for a run that was stopped by hand (the user
  // asked it to stop, and a stopped run is not scored).
  EvaluationOutcome evaluation;
  out.stop_signal = training.returned ? training.result.stop_signal : 0;
  if (out.stop_signal != 0) {
    out.notes.push_back(str("training was stopped by ", out.stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
                            ", so nothing was evaluated (a stopped run is not scored)"));
  } else if (!saved_sha256.empty()) {
    EvaluationStep step;
    step.binary = o.evaluator_binary;
    step.checkpoint_dir = checkpoint;
    step.data_dir = o.data.data_dir;
    step.out_dir = out.run_dir / "eval";
    step.backend = recipe.backend;
    // data parallel: the other processes have finished, so the evaluator may use their threads too
    step.threads = recipe.threads > 0 ? recipe.threads * backend->world_size() : 0;
    step.core = core;
    step.core_max_per_task = o.core_max_per_task;
    step.core_timeout_seconds = o.round == 2 ? o.core_timeout_seconds : 0.0;
    step.progress = o.progress;
    evaluation = run_evaluation_step(step, log);
  } else {
    out.notes.push_back("no final checkpoint was saved, so nothing was evaluated");
  }
  for (const auto& n : evaluation.notes) out.notes.push_back("evaluation: " + n);
  evaluation.evidence.saved_checkpoint_sha256 = saved_sha256;

  // 4. The gate, from the trainer's log, the guard's record and the evaluator's output.
  std::optional<int64_t> logged_nonfinite;
  if (fs::exists(out.run_dir / kMetricsFileName)) {
    try {
      const MetricsLog metrics = read_metrics_file(out.run_dir / kMetricsFileName);
      logged_nonfinite = count_nonfinite_losses(metrics);
      evaluation.evidence.trainer_last_train_loss = last_train_loss(metrics);
      evaluation.evidence.trainer_last_heldout_loss = last_heldout_loss(metrics);
    } catch (const std::exception& e) {
      out.notes.push_back(e.what());
    }
  }
  // The trusted val_bpb beside the trainer's curves, after the gate has read the trainer's own log: a
  // row {"kind": "eval", "split": "val", "val_bpb", "loss" (nats per token)} at the last step, which
  // the event files show as eval/val_bpb and eval/val_loss (docs/run-records.md).
  if (logged_nonfinite && evaluation.val && evaluation.evidence.val_bpb && std::isfinite(*evaluation.evidence.val_bpb) &&
      evaluation.val->tokens > 0) {
    try {
      MetricsWriter(out.run_dir / kMetricsFileName, -1)
          .write(OrderedJson{{metrics_field::kKind, metrics_kind::kEval},
                             {metrics_field::kStep, training.result.steps},
                             {metrics_field::kTokens, training.result.tokens},
                             {metrics_field::kClockSeconds, training.result.train_clock_seconds},
                             {metrics_field::kSplit, metrics_split::kVal},
                             {metrics_field::kLoss, evaluation.val->nats / evaluation.val->tokens},
                             {metrics_field::kValBpb, *evaluation.evidence.val_bpb},
                             {metrics_field::kSource, "clocktrain eval bpb"}});
    } catch (const std::exception& e) {
      out.notes.push_back(str("the val_bpb row of ", kMetricsFileName, " was not written: ", e.what()));
    }
  }
  TrainEvidence train_ev = train_evidence(recipe, *backend, training, guard, logged_nonfinite, job_cores);
  train_ev.startup_seconds += o.planning_seconds;
  const DataPins pins = data_pins(prepared, guard);

  RunResult& r = out.result;
  fill_run_identity(r, o, recipe, out.run_dir);
  r.parameters = training.result.parameters;
  r.train_clock_seconds = training.result.train_clock_seconds;
  r.startup_seconds = training.result.startup_seconds + o.planning_seconds;
  r.steps = training.result.steps;
  r.tokens = training.result.tokens;
  if (evaluation.evidence.val_bpb && std::isfinite(*evaluation.evidence.val_bpb)) r.val_bpb = *evaluation.evidence.val_bpb;
  r.val = evaluation.val;
  r.core = evaluation.core;
  r.gate = run_gate(train_ev, evaluation.evidence, pins, rules);
  r.data.manifest_sha256 = prepared.pinned_manifest_sha256;
  r.data.shards_read = train_ev.shards_read;
  if (backend->name() == "cpu") {
    r.device = describe_cpu_device(training.result.threads);
  } else {
    r.device.backend = backend->name();
    r.device.description = backend->device_description();
    r.device.devices = backend->device_count();
    r.device.threads = training.result.threads;
  }
  r.device.matmul_precision = matmul_precision_name(backend->matmul_precision());
  r.device.matmul_precision_reason = backend->matmul_precision_reason();
  r.device.peak_flops = backend->peak_flops();
  r.device.matmul_ceiling_flops = backend->matmul_ceiling_flops();
  // The tie-break: source lines changed against the baseline (unknown, with the reason, when git cannot say).
  const SourceChanges changes = count_changed_source_lines(source_dir, o.baseline_revision, baseline);
  r.changed_source_lines = changes.lines;
  r.extra["source_changes"] = to_json(changes);  // with why_unknown when the count is null
  r.extra["train_stop"] = Json{{"reason", stop_reason_name(training.result.stop_reason)}, {"error", training.error}};
  r.extra["prepared_data"] = Json{{"dir", prepared.dir.string()}, {"cache_key", prepared.key}, {"reused", prepared.reused}};
  r.extra["notes"] = out.notes;

  // 5. The records.
  out.result_path = out.run_dir / kResultFileName;
  write_result_file(out.result_path, r);
  try {
    out.report_path = write_run_report(out.run_dir);
  } catch (const std::exception& e) {
    out.notes.push_back(str("report: ", e.what()));
  }
  return out;
}

bool launched_as_rank0() { return launch_environment_from_process().rank == 0; }

std::string gate_summary(const RunResult& r) {
  std::string s = str("val_bpb ", r.val_bpb ? format_fixed(*r.val_bpb, 4) : std::string("n/a"));
  if (r.core) s += str("  ", r.core->label, " ", format_fixed(r.core->core, 4));
  s += str("  (", r.steps, " steps, ", r.tokens, " tokens, clock ", format_seconds(r.train_clock_seconds), " of ",
           format_seconds(r.budget_seconds), ")\n");
  for (const auto& c : r.gate.checks)
    s += str("gate ", c.passed ? "PASS " : "FAIL ", c.name, ": ", c.evidence, "\n");
  s += r.gate.eligible ? "gate: eligible\n" : str("gate: NOT eligible: failed ", [&] {
    std::string names;
    for (const auto& n : r.gate.failed_checks()) names += (names.empty() ? "" : ", ") + n;
    return names;
  }(), "\n");
  return s;
}

}  // namespace ct
