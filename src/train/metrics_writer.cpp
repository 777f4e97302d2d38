#include "train/metrics_writer.h"

#include <cerrno>
#include <cstring>
#include <sstream>

#include "util/clock.h"
#include "util/error.h"
#include "util/fault_point.h"
#include "util/files.h"

namespace ct {

MetricsWriter::MetricsWriter(const std::filesystem::path& path, int64_t keep_through_step) : path_(path) {
  if (path.empty()) return;  // a data-parallel process other than rank 0: writes nothing
  if (keep_through_step >= 0 && std::filesystem::exists(path)) {
    std::istringstream in(read_file(path));
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      Json row;
      try {
        row = Json::parse(line);
      } catch (const nlohmann::json::exception&) {
        // A line cut by the crash that the resumed run continues from (parse_error), or one that
        // no run wrote (out_of_range: a number beyond double).
        continue;
      }
      if (row.contains("step") && row["step"].is_number_integer() && row["step"].get<int64_t>() > keep_through_step)
        continue;
      kept += line + "\n";
    }
    write_file_atomic(path, kept);
  }
  file_ = std::fopen(path.c_str(), "a");
  check(file_ != nullptr, path.string(), ": cannot open for appending: ", std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::write(const OrderedJson& row) {
  if (!file_) return;
  // The wall-clock time beside the training clock, to line the log up with other logs (run-records.md).
  OrderedJson timed = row;
  timed["time"] = unix_seconds();
  const std::string line = timed.dump() + "\n";
  // The crash tests kill the process with half a line on disk (the resumed run drops it).
  const size_t half = line.size() / 2;
  bool ok = std::fwrite(line.data(), 1, half, file_) == half && std::fflush(file_) == 0;
  if (ok) fault_point("metrics.half_line");
  ok = ok && std::fwrite(line.data() + half, 1, line.size() - half, file_) == line.size() - half &&
       std::fflush(file_) == 0;
  check(ok, path_.string(), ": write failed: ", std::strerror(errno));
}

void MetricsWriter::event(int64_t step, double clock_seconds, const std::string& name, const std::string& detail) {
  write(OrderedJson{{"kind", "event"}, {"step", step}, {"clock_seconds", clock_seconds}, {"event", name},
                    {"detail", detail}});
}

}  // namespace ct
