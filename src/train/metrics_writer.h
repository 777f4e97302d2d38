#pragma once
// metrics.jsonl (docs/run-records.md): one JSON object per line, appended and flushed as the run
// goes, so a crash loses at most the line being written. (MetricsWriter, not MetricsLog: that is the
// harness's reader-side struct in the same namespace, and two classes of one name are an ODR
// violation once both libraries are linked into the binary.)
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "util/json.h"

namespace ct {

class MetricsWriter {
 public:
  // Opens for appending. When keep_through_step >= 0 (a resumed run), lines of steps after it are
  // dropped first (atomically), so the log continues the checkpoint's run without duplicates.
  // An empty path writes nothing (the data-parallel processes other than rank 0).
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
};

}  // namespace ct
