#pragma once
// metrics.jsonl (docs/run-records.md): one JSON object per line, appended and flushed as the run
// goes, so a crash loses at most the line being written. (MetricsWriter, not MetricsLog: that is the
// harness's reader-side struct in the same namespace, and two classes of one name are an ODR
// violation once both libraries are linked into the binary.)
//
// The same rows, as scalars, go to a TensorBoard event file in the folder's tensorboard/ (train/
// event_file.h; docs/formats.md lists the tags), so that `tensorboard --logdir RUN` shows the run.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "util/json.h"
#include "train/run_layout.h"

namespace ct {

class EventFileWriter;

// The TensorBoard scalars of a metrics.jsonl row (tag, value): train rows give train/loss,
// train/lr_factor, train/grad_norm, train/tokens_per_second, train/mfu, train/step_seconds; eval rows
// eval/<split>_loss (and eval/val_bpb where the row has one). Null (non-finite) values and other
// rows (events) give none.
std::vector<std::pair<std::string, float>> tensorboard_scalars(const OrderedJson& row);

class MetricsWriter {
 public:
  // Opens for appending. When keep_through_step >= 0 (a resumed run), lines of steps after it are
  // dropped first (atomically), so the log continues the checkpoint's run without duplicates.
  // An empty path writes nothing (the data-parallel processes other than rank 0).
  // The TensorBoard event files are rebuilt from the rows kept: earlier ones are removed and one new
  // file gets every kept row, so that they hold what metrics.jsonl holds, resumed or not.
  MetricsWriter(const std::filesystem::path& path, int64_t keep_through_step = -1);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Appends the row with "time": the wall-clock unix seconds now.
  void write(const OrderedJson& row);
  void event(int64_t step, double clock_seconds, const std::string& name, const std::string& detail);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<EventFileWriter> events_;
};

}  // namespace ct
