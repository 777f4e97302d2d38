#include "train/trainer.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <sstream>

#include "backend/backend.h"
#include "backend/parallel/process_group.h"
#include "data/loader.h"
#include "data/manifest.h"
#include "data/prepared_folder.h"
#include "text/tokenizer.h"
#include "model/gpt.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/checkpoint.h"
#include "train/metrics_writer.h"
#include "train/run_folder.h"
#include "train/run_layout.h"
#include "train/train_step.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/files.h"
#include "util/progress.h"
#include "util/sha256.h"
#include "util/stop_signals.h"
#include "util/text_format.h"
#include "util/threads.h"
#include "clocktrain_version.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

// The budget check: the next step may start only if the slowest of the last kStepTimeWindow steps,
// times recipe.step_time_margin, still ends within the budget.
constexpr size_t kStepTimeWindow = 10;

// Thrown out of set-up by a stop signal, caught by execute().
struct StoppedInStartup {
  int signo;
};

const char* signal_name(int signo) { return signo == SIGINT ? "SIGINT" : signo == SIGTERM ? "SIGTERM" : "a signal"; }

// Everything one run holds while it trains.
class Run {
 public:
  explicit Run(const TrainOptions& options) : options_(options), recipe_(options.recipe) {}
  TrainResult execute();

 private:
  void set_up();
  // Rank 0, before anything is written: takes the run folder's lock and checks that this run may
  // write there (train/run_folder.h), and that its file system has room for the checkpoints.
  void claim_run_folder();
  // The folder's first records: run_identity.json, then metrics.jsonl's start or resume event.
  void open_records(int64_t keep_through_step);
  // A run refused or failed in set-up leaves no empty folder of its own making behind.
  void remove_folder_made_for_nothing();
  // A run that fails after set-up says so in metrics.jsonl and train_summary.json (best effort: the
  // failure may be the disk), so that its folder is marked failed, not left looking alive.
  void record_failure(const std::string& error);
  // Data parallel: every process must run the same recipe, binary and data (an error on every rank).
  void check_processes_agree();
  // values as rank 0 has them, on every process (the step time, the startup time, the stop signal):
  // what the processes decide from a clock must be decided once, or they part ways.
  std::vector<double> as_rank0_has_them(std::vector<double> values) const;
  bool writer() const { return rank_ == 0; }  // rank 0 alone writes the run folder
  void resume();
  // Steps until the budget, the step count, a signal or an error stops the run.
  void train_until_stopped();
  // Copies the totals into the result and writes train_summary.json (rank 0).
  void finish_records();
  // Start-up polls the stop signals between its phases (each may take seconds: the data's checks,
  // the model's initialisation), so that a signal there ends the run within moments, with nothing
  // trained and nothing to save (one process only: see the definition).
  void stop_if_signalled_in_startup() const;
  // One optimizer step; returns false when the run must stop (result_.error set).
  bool step();
  double heldout_loss();
  void save_checkpoint();
  void write_train_row(double loss, double lr, double grad_norm, double step_seconds, bool in_clock,
                       double reduction_wait_seconds);
  // The status line on a terminal, and the plain progress line when due (TrainOptions).
  void show_progress(double loss);
  double progress() const;
  bool budget_allows_next_step() const;

  const TrainOptions& options_;
  const StopSignals* signals_ = nullptr;  // installed by execute()
  Recipe recipe_;
  TrainResult result_;
  Stopwatch startup_watch_;
  std::unique_ptr<Backend> owned_backend_;  // when TrainOptions::backend is null
  Backend* backend_ = nullptr;
  int world_ = 1, rank_ = 0;  // data-parallel processes (backend.h), this one
  // The job's processes for the host collectives (process_group.h), whatever the backend; null alone.
  ProcessGroup* processes_ = nullptr;
  std::unique_ptr<GPT> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<TrainStep> train_step_;
  std::unique_ptr<TokenLoader> loader_, heldout_;
  LoaderState heldout_start_;
  std::unique_ptr<MetricsWriter> log_;
  RunFolderLock out_lock_;      // the run folder's (rank 0)
  RunFolderLock source_lock_;   // a resume's checkpoint folder's, while it is read (rank 0)
  std::string lineage_;         // this run's id (train/run_folder.h; rank 0)
  fs::path earlier_records_;    // where a fresh run moved the records of a run that left no checkpoint
  bool made_out_dir_ = false;   // the run folder did not exist before this run
  ProgressLine progress_line_;
  const bool log_lines_ =
      ::isatty(STDOUT_FILENO) != 1 && (options_.log_every_seconds > 0 || options_.log_every_steps > 0);
  double last_log_line_wall_ = monotonic_seconds();
  TrainingProgress progress_;
  fs::path tokenizer_dir_;
  std::vector<int32_t> inputs_, targets_;
  std::deque<double> recent_step_seconds_;
  int64_t steps_this_session_ = 0;
  bool clock_running_ = false;
  double last_checkpoint_wall_ = 0.0;
  double next_eval_clock_ = 0.0;
  double last_tokens_per_second_ = 0.0;
  int64_t last_eval_step_ = -1;
};

void Run::set_up() {
  const Recipe& r = recipe_;
  result_.recipe_name = r.name;
  result_.recipe_sha256 = recipe_hash(r);
  result_.seed = r.seed;
  result_.resumed_from = options_.resume_dir;
  result_.budget_seconds = r.timed() ? r.budget_seconds : 0.0;
  result_.startup_cap_seconds = r.startup_cap_seconds;

  result_.threads = set_thread_count(r.threads);
  result_.available_cores = available_cores();
  if (options_.backend) {
    backend_ = options_.backend;
  } else {
    owned_backend_ = create_recipe_backend(r);
    backend_ = owned_backend_.get();
  }
  result_.backend = backend_->name();
  result_.device_description = backend_->device_description();
  result_.matmul_precision = backend_->matmul_precision();
  result_.matmul_precision_reason = backend_->matmul_precision_reason();
  result_.peak_flops = backend_->peak_flops();
  result_.matmul_ceiling_flops = backend_->matmul_ceiling_flops();
  world_ = backend_->world_size();
  rank_ = backend_->rank();
  if (world_ > 1) processes_ = ProcessGroup::of_this_job();
  check(world_ == (processes_ ? processes_->size() : 1) && rank_ == (processes_ ? processes_->rank() : 0),
        "data parallel: the backend is process ", rank_, " of ", world_, " but this process's job has ",
        processes_ ? processes_->size() : 1, " (launch the training with the launcher that made the backend)");
  result_.world_size = world_;
  // The job's ceilings: every process's (the tokens per second are the job's too)
  result_.peak_flops *= world_;
  result_.matmul_ceiling_flops *= world_;
  check(r.micro_steps() % world_ == 0, r.source_path, ": a step of ", r.micro_steps(), " micro-batches of ",
        r.micro_batch_rows, " rows (tokens_per_step / (micro_batch_rows x sequence_len)) does not divide among ",
        world_, " processes: make the micro-batches a multiple of ", world_);
  if (writer()) claim_run_folder();
  result_.lineage = lineage_;
  stop_if_signalled_in_startup();

  // The data: the manifest must describe tokens of this recipe's vocabulary, made by the tokenizer
  // that the checkpoint will carry.
  const Manifest manifest = load_prepared_manifest(options_.data_dir);
  const std::string manifest_path = (options_.data_dir / kManifestFileName).string();
  check(manifest.vocab_size == r.model.vocab_size, manifest_path, ": vocab_size ", manifest.vocab_size,
        " differs from the recipe's model.vocab_size ", r.model.vocab_size, " (", r.source_path, ")");
  tokenizer_dir_ = options_.data_dir / "tokenizer";
  for (const fs::path& file : {tokenizer_dir_ / kTokenizerTiktokenFile, tokenizer_json_path(tokenizer_dir_)}) {
    check(fs::exists(file), file.string(),
          ": missing (the checkpoint carries the tokenizer; prepare the data folder with `clocktrain data prepare`)");
    if (options_.read_guard) options_.read_guard->admit(file);  // copied into each checkpoint
  }
  verify_prepared_tokenizer(options_.data_dir, manifest);
  const int64_t T = r.model.sequence_len;
  loader_ = std::make_unique<TokenLoader>(options_.data_dir, "train", r.micro_batch_rows, T, r.seed, rank_, world_,
                                          options_.read_guard);
  result_.manifest_sha256 = loader_->manifest_sha256();
  stop_if_signalled_in_startup();
  check_processes_agree();
  const bool eval_enabled = r.eval_tokens > 0 && (r.eval_every_steps > 0 || r.eval_every_seconds > 0);
  if (eval_enabled && manifest.tokens_of("heldout") > 0 && writer()) {  // rank 0's (heldout_loss)
    const int64_t rows = std::min(r.micro_batch_rows, r.eval_tokens / T);
    heldout_ = std::make_unique<TokenLoader>(options_.data_dir, "heldout", rows, T, /*seed=*/0, 0, 1,
                                             options_.read_guard);
    heldout_start_ = heldout_->state();
    stop_if_signalled_in_startup();
  }

  model_ = std::make_unique<GPT>(*backend_, r.model);  // f32; matmul operands per backend.matmul_precision (gpt.h)
  optimizer_ = std::make_unique<Optimizer>(*model_, r.optimizer);
  train_step_ = std::make_unique<TrainStep>(*model_, *optimizer_, processes_, r.micro_steps() / world_,
                                            r.micro_batch_rows, r.model.sequence_len, r.graphs);
  result_.parameters = model_->parameter_count();
  result_.flops_per_token = r.model.flops_per_token();
  stop_if_signalled_in_startup();
  if (options_.resume_dir.empty()) {
    model_->initialize(r.seed);  // the same seed on every process: the same weights
    stop_if_signalled_in_startup();
    open_records(-1);
    std::string detail = str("recipe ", r.name, " (", result_.recipe_sha256.substr(0, 12), "), ", result_.parameters,
                             " parameters, matmuls ", result_.matmul_precision_reason, ", ",
                             result_.device_description, ", ", result_.threads, " threads",
                             world_ > 1 ? str(" in each of ", world_, " processes") : std::string());
    if (!earlier_records_.empty())
      detail += str("; the records of a run that left no checkpoint were moved to ", earlier_records_.string());
    log_->event(0, 0.0, "start", detail);
  } else {
    resume();
  }
  inputs_.reserve(static_cast<size_t>(r.micro_batch_rows * T));
  targets_.reserve(inputs_.capacity());
  next_eval_clock_ = progress_.clock_seconds + r.eval_every_seconds;
}

void Run::claim_run_folder() {
  const fs::path& out = options_.out_dir;
  const fs::path& checkpoint = options_.resume_dir;
  std::error_code ec;
  // Read-only checks first, so that a refusal writes nothing, not even the lock's pid (a live writer
  // is named first); then the lock, and the same checks under it.
  RunFolderLock::of_existing(out);
  if (checkpoint.empty()) {
    check_folder_for_fresh_run(out);
  } else {
    // (checkpoint.old alone: a crash between a checkpoint write's two renames, repaired below)
    check(fs::is_directory(checkpoint) || fs::is_directory(fs::path(checkpoint.string() + ".old")),
          checkpoint.string(), ": not a checkpoint folder");
    if (fs::is_directory(checkpoint)) check_folder_for_resume(out, checkpoint, read_checkpoint_identity(checkpoint));
  }
  check_room_for_checkpoints(out, recipe_.model);
  made_out_dir_ = !fs::exists(out, ec);
  check_writable_folder(out, "--out");
  out_lock_ = RunFolderLock(out);
  if (checkpoint.empty()) {
    earlier_records_ = claim_folder_for_fresh_run(out);
    lineage_ = new_lineage();
    return;
  }
  // The checkpoint's own folder may be another run's, being written now: its lock first, then the
  // repair of what a crash left there (which removes staged folders), then its identity.
  const fs::path source =
      checkpoint.lexically_normal().parent_path().empty() ? fs::path(".") : checkpoint.lexically_normal().parent_path();
  if (!fs::equivalent(source, out, ec)) source_lock_ = RunFolderLock::of_existing(source);
  recover_checkpoint_directory(checkpoint);
  check(fs::is_directory(checkpoint), checkpoint.string(), ": not a checkpoint folder");
  const CheckpointIdentity identity = read_checkpoint_identity(checkpoint);
  check_folder_for_resume(out, checkpoint, identity);
  lineage_ = identity.lineage.empty() ? new_lineage() : identity.lineage;  // a checkpoint from before lineages
}

void Run::remove_folder_made_for_nothing() {
  if (!made_out_dir_ || log_) return;
  std::error_code ec;
  out_lock_ = RunFolderLock();
  fs::remove(options_.out_dir / kRunLockFile, ec);
  fs::remove(options_.out_dir, ec);  // only if empty
}

void Run::open_records(int64_t keep_through_step) {
  if (writer()) write_run_identity(options_.out_dir, lineage_, options_.resume_dir);
  log_ = std::make_unique<MetricsWriter>(writer() ? options_.out_dir / kMetricsFileName : fs::path(), keep_through_step);
}

void Run::record_failure(const std::string& error) {
  result_.error = error;
  result_.stop_reason = StopReason::error;
  try {
    if (log_) log_->event(progress_.step, progress_.clock_seconds, metrics_event::kStop, str("error: ", error));
    finish_records();
  } catch (const Error&) {
    // the failure may be the disk itself; the error is thrown on as it is
  }
}

void Run::check_processes_agree() {
  if (world_ == 1) return;
  // 64 bits of a hash of what must be equal, as two 32-bit halves (exact in doubles), in this
  // process's two slots; the sum gives every process every fingerprint.
  const std::string what = str(result_.recipe_sha256, " ", kVersion, " ", loader_->manifest_sha256());
  const std::string hash = sha256_hex(what);
  const uint64_t bits = std::stoull(hash.substr(0, 16), nullptr, 16);
  std::vector<double> fingerprints(static_cast<size_t>(2 * world_), 0.0);
  fingerprints[static_cast<size_t>(2 * rank_)] = static_cast<double>(bits >> 32);
  fingerprints[static_cast<size_t>(2 * rank_ + 1)] = static_cast<double>(bits & 0xffffffffu);
  processes_->all_reduce_sum(fingerprints);
  std::string differ;
  for (int p = 1; p < world_; ++p)
    if (fingerprints[static_cast<size_t>(2 * p)] != fingerprints[0] ||
        fingerprints[static_cast<size_t>(2 * p + 1)] != fingerprints[1])
      differ += str(differ.empty() ? "" : ", ", p);
  check(differ.empty(), "data parallel: process(es) ", differ, " of ", world_,
        " run another recipe, clocktrain version or data folder than rank 0 (compared: the resolved recipe's "
        "sha256, the version ", kVersion, " and the data manifest's sha256); start every process with the same "
        "binary, recipe and --data");
}

std::vector<double> Run::as_rank0_has_them(std::vector<double> values) const {
  if (world_ == 1) return values;
  if (rank_ != 0) std::fill(values.begin(), values.end(), 0.0);
  processes_->all_reduce_sum(values);  // 0 + x = x
  return values;
}

void Run::resume() {
  as_rank0_has_them({0.0});  // data parallel: the others read the checkpoint once rank 0 has repaired it
  CheckpointContents c = load_training_checkpoint(options_.resume_dir, *model_, *optimizer_);
  as_rank0_has_them({0.0});  // every process has read it: its folder's lock may go
  source_lock_ = RunFolderLock();
  check(c.world_size == world_, options_.resume_dir.string(), ": the checkpoint was trained by ", c.world_size,
        " process(es) and this run has ", world_, ": resume it with ", c.world_size,
        " (the data loader's position counts every process's rows)");
  loader_->restore(loader_state_from_json(c.loader_state));
  progress_ = c.progress;
  open_records(progress_.step);
  std::string detail = str("from ", options_.resume_dir.string(), " at step ", progress_.step, ", clock ",
                           format_fixed(progress_.clock_seconds, 1), " s");
  if (c.recipe_sha256 != result_.recipe_sha256)
    detail += str("; recipe changed: ", c.recipe_sha256.substr(0, 12), " -> ", result_.recipe_sha256.substr(0, 12));
  log_->event(progress_.step, progress_.clock_seconds, "resume", detail);
}

double Run::progress() const {
  if (recipe_.timed()) return progress_.clock_seconds / recipe_.budget_seconds;
  return static_cast<double>(progress_.step) / static_cast<double>(recipe_.steps);
}

bool Run::budget_allows_next_step() const {
  if (recent_step_seconds_.empty()) return progress_.clock_seconds < recipe_.budget_seconds;
  const double estimate =
      recipe_.step_time_margin * *std::max_element(recent_step_seconds_.begin(), recent_step_seconds_.end());
  return progress_.clock_seconds + estimate <= recipe_.budget_seconds;
}

bool Run::step() {
  const Recipe& r = recipe_;
  const int64_t micro_steps = r.micro_steps();
  const int64_t step_number = progress_.step + 1;
  const StepSchedule at = schedule_at(r.schedule, progress());
  const double lr = at.lr_factor;
  const bool in_clock = clock_running_;

  Stopwatch watch;
  // forward and backward of every micro-batch, then the gradient check: one wait (train_step.h)
  const StepMeasurement measured = train_step_->forward_backward(
      [&](std::vector<int32_t>& inputs, std::vector<int32_t>& targets) { loader_->next_batch(inputs, targets); });
  double loss_sum = 0.0;
  std::string bad;
  for (int64_t m = 0; m < micro_steps; ++m) {
    double micro_loss = measured.micro_losses[static_cast<size_t>(m)];
    if (step_number == r.debug_nan_loss_at_step && m == 0) micro_loss = std::nan("");  // [debug] fault injection
    if (!std::isfinite(micro_loss) && bad.empty()) bad = str("the loss of micro-batch ", m + 1, " is ", micro_loss);
    loss_sum += micro_loss;
  }
  const double loss = loss_sum / static_cast<double>(micro_steps);
  const GradientCheck& grads = measured.gradients;
  if (bad.empty() && !grads.finite())
    bad = str("the gradient of ", grads.first_nonfinite, " is not finite (", grads.nonfinite_tensors,
              " tensors in all)");
  if (bad.empty()) train_step_->apply(at, grads.norm);
  backend_->synchronize();
  // rank 0's time on every process: the budget check and the schedule's progress depend on it
  const double step_seconds = as_rank0_has_them({watch.seconds()})[0];

  progress_.step = step_number;
  progress_.tokens += r.tokens_per_step;
  ++steps_this_session_;
  if (in_clock) {
    progress_.clock_seconds += step_seconds;
    recent_step_seconds_.push_back(step_seconds);
    if (recent_step_seconds_.size() > kStepTimeWindow) recent_step_seconds_.pop_front();
  }
  last_tokens_per_second_ = static_cast<double>(r.tokens_per_step) / step_seconds;
  result_.final_loss = loss;
  result_.final_lr_factor = lr;
  write_train_row(loss, lr, grads.norm, step_seconds, in_clock, measured.reduction_wait_seconds);

  if (!bad.empty()) {
    ++progress_.nonfinite_steps;
    const std::string message = str("step ", step_number, ": ", bad, "; the step was not applied");
    if (r.nan_policy == NanPolicy::stop) {
      log_->event(step_number, progress_.clock_seconds, metrics_event::kNonFinite,
                  message + "; the run stops (nan_policy stop)");
      result_.error = message + " (nan_policy \"stop\")";
      result_.stop_reason = StopReason::nonfinite;
      return false;
    }
    log_->event(step_number, progress_.clock_seconds, metrics_event::kNonFinite, message + "; skipped (nan_policy skip)");
  }

  // The clock starts once the startup steps are done (or at once when there are none).
  if (!clock_running_ && steps_this_session_ >= r.startup_steps) {
    const double startup = as_rank0_has_them({startup_watch_.seconds()})[0];
    progress_.startup_seconds += startup;
    if (startup > r.startup_cap_seconds) {
      const std::string message = str("startup took ", format_fixed(startup, 1), " s, over the cap of ",
                                      format_fixed(r.startup_cap_seconds, 1), " s (run.startup_cap_seconds)");
      log_->event(step_number, progress_.clock_seconds, "startup_cap_exceeded", message);
      result_.error = message;
      result_.stop_reason = StopReason::startup_cap;
      return false;
    }
    clock_running_ = true;
    recent_step_seconds_.push_back(step_seconds);  // a first (pessimistic) estimate for the budget check
    log_->event(step_number, progress_.clock_seconds, metrics_event::kClockStart, str("startup ", format_fixed(startup, 1), " s"));
  }
  show_progress(loss);
  return true;
}

void Run::write_train_row(double loss, double lr, double grad_norm, double step_seconds, bool in_clock,
                          double reduction_wait_seconds) {
  const double flops_per_second = result_.flops_per_token * last_tokens_per_second_;
  using namespace metrics_field;
  OrderedJson row{{kKind, metrics_kind::kTrain},
                  {kStep, progress_.step},
                  {kTokens, progress_.tokens},
                  {kClockSeconds, progress_.clock_seconds},
                  {kLoss, std::isfinite(loss) ? Json(loss) : Json(nullptr)},
                  {kLrFactor, lr},
                  {kGradNorm, std::isfinite(grad_norm) ? Json(grad_norm) : Json(nullptr)},
                  {kTokensPerSecond, last_tokens_per_second_},
                  {kFlopsPerSecond, flops_per_second},
                  {kMfu, result_.peak_flops > 0 ? Json(flops_per_second / result_.peak_flops) : Json(nullptr)},
                  {kOfMatmulCeiling, result_.matmul_ceiling_flops > 0
                                         ? Json(flops_per_second / result_.matmul_ceiling_flops)
                                         : Json(nullptr)},
                  {kStepSeconds, step_seconds},
                  {kInClock, in_clock}};
  if (world_ > 1) row[kReductionWaitSeconds] = reduction_wait_seconds;  // rank 0's (train_step.h)
  log_->write(row);
}

void Run::show_progress(double loss) {
  if (!writer() || !options_.progress_line) return;
  const bool status_line = progress_line_.enabled();
  const double now = monotonic_seconds();
  const bool log_line_due =
      log_lines_ && ((options_.log_every_steps > 0 && progress_.step % options_.log_every_steps == 0) ||
                     (options_.log_every_seconds > 0 && now - last_log_line_wall_ >= options_.log_every_seconds));
  if (!status_line && !log_line_due) return;
  const Recipe& r = recipe_;
  std::string text = str("step ", progress_.step);
  double left;
  if (r.timed()) {
    text += str(" | clock ", format_fixed(progress_.clock_seconds, 1), "/", format_fixed(r.budget_seconds, 0), " s");
    left = r.budget_seconds - progress_.clock_seconds;
  } else {
    text += str("/", r.steps, " | clock ", format_fixed(progress_.clock_seconds, 1), " s");
    left = static_cast<double>(r.steps - progress_.step) * static_cast<double>(r.tokens_per_step) /
           std::max(last_tokens_per_second_, 1e-9);
  }
  text += str(" | loss ", format_fixed(loss, 4), " | ", format_fixed(last_tokens_per_second_, 0), " tok/s");
  if (result_.peak_flops > 0)
    text += str(" | MFU ", format_fixed(100.0 * result_.flops_per_token * last_tokens_per_second_ / result_.peak_flops, 1), "%");
  text += " | left " + format_duration(std::max(0.0, left));
  if (status_line) progress_line_.update(text);
  if (log_line_due) {
    std::printf("train: %s\n", text.c_str());
    std::fflush(stdout);
    last_log_line_wall_ = now;
  }
}

// Mean loss over recipe.eval_tokens of the held-out split, the same slice every time.
double Run::heldout_loss() {
  const int64_t T = recipe_.model.sequence_len;
  heldout_->restore(heldout_start_);
  const int64_t rows_per_batch = std::max<int64_t>(1, std::min(recipe_.micro_batch_rows, recipe_.eval_tokens / T));
  const int64_t batches = std::max<int64_t>(1, recipe_.eval_tokens / T / rows_per_batch);
  std::vector<int32_t> inputs, targets;
  std::vector<float> losses(static_cast<size_t>(rows_per_batch * T));
  double total = 0.0;
  int64_t count = 0;
  for (int64_t b = 0; b < batches; ++b) {
    heldout_->next_batch(inputs, targets);
    model_->evaluate(inputs.data(), targets.data(), rows_per_batch, T, losses.data());
    for (size_t i = 0; i < losses.size(); ++i)
      if (targets[i] >= 0) {
        total += losses[i];
        ++count;
      }
  }
  const double loss = count > 0 ? total / static_cast<double>(count) : 0.0;
  using namespace metrics_field;
  log_->write(OrderedJson{{kKind, metrics_kind::kEval},
                          {kStep, progress_.step},
                          {kTokens, progress_.tokens},
                          {kClockSeconds, progress_.clock_seconds},
                          {kSplit, metrics_split::kHeldout},
                          {kLoss, std::isfinite(loss) ? Json(loss) : Json(nullptr)},
                          {kEvalTokens, count}});
  result_.last_eval_loss = loss;
  last_eval_step_ = progress_.step;
  return loss;
}

void Run::save_checkpoint() {
  const fs::path dir = options_.out_dir / kCheckpointDir;
  result_.checkpoint_dir = dir;
  optimizer_->gather_state();  // a sharded optimizer's state from its owners (every process calls this)
  if (!writer()) return;       // every process now holds the same weights and optimizer state
  CheckpointContents contents;
  contents.progress = progress_;
  contents.loader_state = to_json(loader_->state());
  contents.recipe = to_json(recipe_);
  contents.recipe_sha256 = result_.recipe_sha256;
  contents.world_size = world_;
  contents.lineage = lineage_;
  try {
    save_training_checkpoint(dir, *model_, *optimizer_, contents, tokenizer_dir_);
  } catch (const Error& e) {
    const std::string message = str("the checkpoint of step ", progress_.step, " was not written (", e.what(),
                                    "); any previous checkpoint in ", dir.string(), " is intact");
    try {
      log_->event(progress_.step, progress_.clock_seconds, metrics_event::kCheckpointFailed, message);
    } catch (const Error&) {
      // the metrics file is on the same full disk
    }
    throw Error(message);
  }
  last_checkpoint_wall_ = monotonic_seconds();
  log_->event(progress_.step, progress_.clock_seconds, metrics_event::kCheckpoint, dir.string());
}

TrainResult Run::execute() {
  const StopSignals signals;
  signals_ = &signals;
  try {
    set_up();
  } catch (const Error&) {
    remove_folder_made_for_nothing();
    throw;
  } catch (const StoppedInStartup& stop) {
    // nothing was trained: no checkpoint; records written so far say why the run stopped
    result_.stop_signal = stop.signo;
    result_.stop_reason = StopReason::signal;
    result_.checkpoint_dir = options_.resume_dir;  // still the one to continue from (none for a fresh run)
    remove_folder_made_for_nothing();
    if (log_) log_->event(progress_.step, progress_.clock_seconds, metrics_event::kStop, "signal during start-up");
    finish_records();
    return result_;
  }
  try {
    train_until_stopped();
    progress_line_.finish();
    // A run stopped by a signal before its first step of this session has nothing new to save.
    const bool trained = steps_this_session_ > 0 || result_.stop_reason != StopReason::signal;
    if (result_.ok() && trained) {
      if (heldout_ && last_eval_step_ != progress_.step) heldout_loss();  // the final model's held-out loss
      save_checkpoint();
    } else if (!trained) {
      result_.checkpoint_dir = options_.resume_dir;  // still the one to continue from (none for a fresh run)
    }
    log_->event(progress_.step, progress_.clock_seconds, metrics_event::kStop,
                result_.ok() ? std::string(stop_reason_name(result_.stop_reason))
                             : str(stop_reason_name(result_.stop_reason), ": ", result_.error));
  } catch (const Error& e) {
    record_failure(e.what());
    throw;
  }
  finish_records();
  return result_;
}

void Run::stop_if_signalled_in_startup() const {
  // Data parallel, every process must stop at the same point: the training loop's first check does that.
  if (world_ == 1 && signals_ && signals_->received()) throw StoppedInStartup{signals_->received()};
}

void Run::train_until_stopped() {
  const Recipe& r = recipe_;
  last_checkpoint_wall_ = monotonic_seconds();
  if (r.startup_steps == 0) {
    progress_.startup_seconds += startup_watch_.seconds();
    clock_running_ = true;
    log_->event(progress_.step, progress_.clock_seconds, metrics_event::kClockStart,
                str("startup ", format_fixed(startup_watch_.seconds(), 1), " s"));
  }
  while (true) {
    // What this loop decides from signals and clocks is decided on rank 0's view (or any process's
    // signal), so that every process takes the same number of steps.
    std::vector<double> view{static_cast<double>(signals_->received()), startup_watch_.seconds()};
    if (world_ > 1) {
      if (rank_ != 0) view[1] = 0.0;
      processes_->all_reduce_sum(view);
    }
    const int any_signal = view[0] > 0 ? (signals_->received() ? signals_->received() : SIGTERM) : 0;
    const double startup_elapsed = view[1];
    if (const int signo = any_signal) {
      result_.stop_signal = signo;
      result_.stop_reason = StopReason::signal;
      log_->event(progress_.step, progress_.clock_seconds, "signal",
                  steps_this_session_ > 0
                      ? str(signal_name(signo), ": the run stops after step ", progress_.step, " with a checkpoint")
                      : str(signal_name(signo), ": the run stops before its first step"));
      break;
    }
    if (r.timed()) {
      if (clock_running_ && !budget_allows_next_step()) {
        result_.stop_reason = StopReason::budget;
        break;
      }
    } else if (progress_.step >= r.steps) {
      result_.stop_reason = StopReason::steps;
      break;
    }
    if (options_.stop_after_steps > 0 && steps_this_session_ >= options_.stop_after_steps) {
      result_.stop_reason = StopReason::stop_after_steps;
      break;
    }
    if (!clock_running_ && startup_elapsed > r.startup_cap_seconds) {
      progress_.startup_seconds += startup_elapsed;  // the evidence of the time check
      result_.error = str("startup passed the cap of ", format_seconds(r.startup_cap_seconds),
                          " before the clock started (run.startup_cap_seconds)");
      result_.stop_reason = StopReason::startup_cap;
      log_->event(progress_.step, progress_.clock_seconds, "startup_cap_exceeded", result_.error);
      break;
    }
    if (!step()) break;
    const bool eval_by_steps = r.eval_every_steps > 0 && progress_.step % r.eval_every_steps == 0;
    const bool eval_by_time = r.eval_every_seconds > 0 && progress_.clock_seconds >= next_eval_clock_;
    if (heldout_ && (eval_by_steps || eval_by_time)) {
      heldout_loss();
      while (r.eval_every_seconds > 0 && next_eval_clock_ <= progress_.clock_seconds)
        next_eval_clock_ += r.eval_every_seconds;
    }
    if (r.checkpoint_every_minutes > 0) {
      const bool due = monotonic_seconds() - last_checkpoint_wall_ >= 60.0 * r.checkpoint_every_minutes;
      if (as_rank0_has_them({due ? 1.0 : 0.0})[0] > 0) save_checkpoint();  // every process, on rank 0's clock
    }
  }
}

void Run::finish_records() {
  result_.steps = progress_.step;
  result_.tokens = progress_.tokens;
  result_.train_clock_seconds = progress_.clock_seconds;
  result_.startup_seconds = progress_.startup_seconds;
  result_.nonfinite_steps = progress_.nonfinite_steps;
  if (loader_) result_.shards_read = loader_->shards_read();
  if (writer() && log_) write_file_atomic(options_.out_dir / kTrainSummaryFile, to_json(result_).dump(2) + "\n");
}

}  // namespace

Json to_json(const TrainResult& r) {
  Json shards = Json::array();
  for (const auto& [name, sha] : r.shards_read) shards.push_back({{"name", name}, {"sha256", sha}});
  return Json{{"format", "clocktrain-train-summary/1"},
              {"recipe", {{"name", r.recipe_name}, {"sha256", r.recipe_sha256}}},
              {"parameters", r.parameters},
              {"flops_per_token", r.flops_per_token},
              {"steps", r.steps},
              {"tokens", r.tokens},
              {"train_clock_seconds", r.train_clock_seconds},
              {"startup_seconds", r.startup_seconds},
              {"budget_seconds", r.budget_seconds},
              {"startup_cap_seconds", r.startup_cap_seconds},
              {"final_loss", std::isfinite(r.final_loss) ? Json(r.final_loss) : Json(nullptr)},
              {"final_lr_factor", r.final_lr_factor},
              {"last_eval_loss", r.last_eval_loss >= 0 ? Json(r.last_eval_loss) : Json(nullptr)},
              {"nonfinite_steps", r.nonfinite_steps},
              {"stop_reason", stop_reason_name(r.stop_reason)},
              {"stop_signal", r.stop_signal != 0 ? Json(signal_name(r.stop_signal)) : Json(nullptr)},
              {"error", r.error.empty() ? Json(nullptr) : Json(r.error)},
              {"checkpoint_dir", r.checkpoint_dir.string()},
              {"init",
               {{"seed", r.seed},
                {"resumed_from", r.resumed_from.empty() ? Json(nullptr) : Json(r.resumed_from.string())},
                {"lineage", r.lineage}}},
              {"data", {{"manifest_sha256", r.manifest_sha256}, {"shards_read", shards}}},
              {"device",
               {{"backend", r.backend},
                {"description", r.device_description},
                {"threads", r.threads},
                {"available_cores", r.available_cores},
                {"world_size", r.world_size},
                {"matmul_precision", matmul_precision_name(r.matmul_precision)},
                {"matmul_precision_reason", r.matmul_precision_reason},
                {"peak_flops", r.peak_flops},
                {"matmul_ceiling_flops", r.matmul_ceiling_flops}}}};
}

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::none: return "";
    case StopReason::budget: return "budget";
    case StopReason::steps: return "steps";
    case StopReason::stop_after_steps: return "stop_after_steps";
    case StopReason::signal: return "signal";
    case StopReason::nonfinite: return "nonfinite";
    case StopReason::startup_cap: return "startup_cap";
    case StopReason::error: return "error";
  }
  return "";
}

std::string backend_start_line(const Backend& backend) {
  const double ceiling = backend.matmul_ceiling_flops();  // 0: the backend has no probe (cuda)
  return str("backend: ", backend.name(), ", matmuls ", backend.matmul_precision_reason(), "; ",
             backend.device_description(), "; ",
             ceiling > 0 ? str("measured matmul ceiling ", format_fixed(ceiling / 1e9, 1), " GFLOP/s")
                         : std::string("matmul ceiling not measured on this backend"));
}

TrainResult train(const TrainOptions& options) {
  Run run(options);
  return run.execute();
}

}  // namespace ct
