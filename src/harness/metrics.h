#pragma once
// Reading metrics.jsonl (docs/run-records.md), the trainer's log: for the gate's valid_score
// evidence and for the report's charts. Numbers that the trainer wrote as null (a NaN or Inf it
// could not write as JSON, or an unknown MFU) are read as NaN. Every record's "time" (wall-clock unix
// seconds) is optional, absent from logs written before it was added. Records of an unknown kind are
// skipped (new kinds may be added); a malformed line is an error naming the file and line, except
// an unterminated last line, which a run killed mid-write leaves behind and which is only noted.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "train/run_layout.h"  // the names it reads

namespace ct {

struct TrainStepRecord {
  int64_t step = 0;
  int64_t tokens = 0;
  double clock_seconds = 0;
  double loss = 0;
  double lr_factor = 0;
  double grad_norm = 0;
  double tokens_per_second = 0;
  double flops_per_second = 0;
  double mfu = 0;                // of the device's theoretical peak
  double of_matmul_ceiling = 0;  // of the backend's measured matmul rate
  double step_seconds = 0;
  // false for the startup steps, which run before the training clock starts (harness.md); a log
  // written without the field counts the steps at clock 0 as startup steps.
  bool in_clock = true;
  double time = NAN;  // wall-clock unix seconds when the line was written; NaN in logs from before it
};

struct EvalRecord {
  int64_t step = 0;
  int64_t tokens = 0;
  double clock_seconds = 0;
  std::string split;
  double loss = 0;
  double time = NAN;
};

struct EventRecord {
  int64_t step = 0;
  double clock_seconds = 0;
  std::string event;
  std::string detail;
  double time = NAN;
};

struct MetricsLog {
  std::vector<TrainStepRecord> train;
  std::vector<EvalRecord> evals;
  std::vector<EventRecord> events;
  int64_t skipped_unknown_kind = 0;
  bool truncated_last_line = false;
};

MetricsLog parse_metrics_jsonl(const std::string& text, const std::string& where);
MetricsLog read_metrics_file(const std::filesystem::path& path);

// Steps with a NaN or Inf loss (train or held-out) or a "nonfinite" event: the valid_score evidence.
int64_t count_nonfinite_losses(const MetricsLog& log);

// The trainer's last logged losses, shown beside the trusted score for information only.
std::optional<double> last_train_loss(const MetricsLog& log);
std::optional<double> last_heldout_loss(const MetricsLog& log);

}  // namespace ct
