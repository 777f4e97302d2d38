#pragma once
// The names of what a run writes, each defined once (docs/run-records.md): the run folder's files,
// and metrics.jsonl's kinds, fields, splits and events. The trainer and the run pipeline write them;
// the harness (harness/metrics.h, the report) reads them.
namespace ct {

// ---- the run folder (docs/train.md, "Run folders") ------------------------------------------------
inline constexpr const char* kMetricsFileName = "metrics.jsonl";
inline constexpr const char* kTensorBoardDir = "tensorboard";  // beside metrics.jsonl: its event files
inline constexpr const char* kTrainSummaryFile = "train_summary.json";
inline constexpr const char* kRunIdentityFile = "run_identity.json";
inline constexpr const char* kRunLockFile = "run.lock";
inline constexpr const char* kCheckpointDir = "checkpoint";
// The checkpoint before the one being written, while the new one is moved into place
// (train/checkpoint.h); a crash between the two renames leaves it alone.
inline constexpr const char* kCheckpointOldDir = "checkpoint.old";

// ---- metrics.jsonl: one JSON object per line -------------------------------------------------------
namespace metrics_field {
inline constexpr const char* kKind = "kind";  // one of metrics_kind
inline constexpr const char* kStep = "step";
inline constexpr const char* kTokens = "tokens";
inline constexpr const char* kClockSeconds = "clock_seconds";
inline constexpr const char* kTime = "time";  // wall-clock unix seconds when the row was written
inline constexpr const char* kLoss = "loss";  // nats per token; null when not finite
// train rows
inline constexpr const char* kLrFactor = "lr_factor";
inline constexpr const char* kGradNorm = "grad_norm";
inline constexpr const char* kTokensPerSecond = "tokens_per_second";
inline constexpr const char* kFlopsPerSecond = "flops_per_second";
inline constexpr const char* kMfu = "mfu";
inline constexpr const char* kOfMatmulCeiling = "of_matmul_ceiling";
inline constexpr const char* kStepSeconds = "step_seconds";
inline constexpr const char* kInClock = "in_clock";
inline constexpr const char* kReductionWaitSeconds = "reduction_wait_seconds";
// eval rows
inline constexpr const char* kSplit = "split";  // one of metrics_split
inline constexpr const char* kEvalTokens = "eval_tokens";
inline constexpr const char* kValBpb = "val_bpb";
inline constexpr const char* kSource = "source";
// event rows
inline constexpr const char* kEvent = "event";  // one of metrics_event
inline constexpr const char* kDetail = "detail";
}  // namespace metrics_field

namespace metrics_kind {
inline constexpr const char* kTrain = "train";
inline constexpr const char* kEval = "eval";
inline constexpr const char* kEvent = "event";
}  // namespace metrics_kind

namespace metrics_split {
inline constexpr const char* kHeldout = "heldout";  // the trainer's periodic held-out loss
inline constexpr const char* kVal = "val";          // the trusted evaluator's, on the pinned val set
}  // namespace metrics_split

namespace metrics_event {
inline constexpr const char* kClockStart = "clock_start";
inline constexpr const char* kCheckpoint = "checkpoint";
inline constexpr const char* kCheckpointFailed = "checkpoint_failed";
inline constexpr const char* kNonFinite = "nonfinite";
inline constexpr const char* kStop = "stop";
}  // namespace metrics_event

}  // namespace ct
