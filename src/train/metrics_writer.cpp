#include "train/metrics_writer.h"

#include <cerrno>
#include <cstring>
#include <sstream>

#include "util/error.h"
#include "util/files.h"

namespace ct {

MetricsWriter::MetricsWriter(const std::filesystem::path& path, int64_t keep_through_step) : path_(path) {
  if (keep_through_step >= 0 && std::filesystem::exists(path)) {
    std::istringstream in(read_file(path));
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      Json row;
      try {
        row = Json::parse(line);
      } catch (const nlohmann::json::parse_error&) {
        continue;  // a line cut by the crash that the resumed run continues from
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
  const std::string line = row.dump() + "\n";
  check(std::fwrite(line.data(), 1, line.size(), file_) == line.size() && std::fflush(file_) == 0, path_.string(),
        ": write failed: ", std::strerror(errno));
}

void MetricsWriter::event(int64_t step, double clock_seconds, const std::string& name, const std::string& detail) {
  write(OrderedJson{{"kind", "event"}, {"step", step}, {"clock_seconds", clock_seconds}, {"event", name},
                    {"detail", detail}});
}

}  // namespace ct
