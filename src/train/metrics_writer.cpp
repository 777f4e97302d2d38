#include "train/metrics_writer.h"

#include <cerrno>
#include <cstring>
#include <sstream>

#include "train/event_file.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fault_point.h"
#include "util/files.h"

namespace ct {

namespace fs = std::filesystem;

std::vector<std::pair<std::string, float>> tensorboard_scalars(const OrderedJson& row) {
  std::vector<std::pair<std::string, float>> out;
  using namespace metrics_field;
  if (!row.is_object() || !row.contains(kKind) || !row[kKind].is_string()) return out;
  auto add = [&](const char* field, const std::string& tag) {
    if (row.contains(field) && row[field].is_number()) out.emplace_back(tag, row[field].get<float>());
  };
  const std::string kind = row[kKind].get<std::string>();
  if (kind == metrics_kind::kTrain) {
    for (const char* field : {kLoss, kLrFactor, kGradNorm, kTokensPerSecond, kMfu, kStepSeconds})
      add(field, str("train/", field));
  } else if (kind == metrics_kind::kEval) {
    const std::string split = row.contains(kSplit) && row[kSplit].is_string() ? row[kSplit].get<std::string>() : "eval";
    add(kLoss, "eval/" + split + "_loss");
    add(kValBpb, str("eval/", kValBpb));
  }
  return out;
}

MetricsWriter::MetricsWriter(const fs::path& path, int64_t keep_through_step) : path_(path) {
  if (path.empty()) return;  // a data-parallel process other than rank 0: writes nothing
  std::vector<OrderedJson> kept_rows;  // the rows that the event file is rebuilt from
  if (fs::exists(path)) {
    std::istringstream in(read_file(path));
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      OrderedJson row;
      try {
        row = ordered_json_from_text(line, path.string());
      } catch (const Error&) {
        // A line cut by the crash that the resumed run continues from, or one that no run wrote.
        continue;
      }
      if (keep_through_step >= 0 && row.contains(metrics_field::kStep) && row[metrics_field::kStep].is_number_integer() &&
          row[metrics_field::kStep].get<int64_t>() > keep_through_step)
        continue;
      kept += line + "\n";
      kept_rows.push_back(std::move(row));
    }
    if (keep_through_step >= 0) write_file_atomic(path, kept);
  }
  file_ = std::fopen(path.c_str(), "a");
  check(file_ != nullptr, path.string(), ": cannot open for appending: ", std::strerror(errno));

  const fs::path tensorboard = path.parent_path() / kTensorBoardDir;
  std::error_code ec;
  if (fs::is_directory(tensorboard, ec))
    for (const auto& entry : fs::directory_iterator(tensorboard))
      if (entry.path().filename().string().starts_with("events.out.tfevents.")) fs::remove(entry.path());
  events_ = std::make_unique<EventFileWriter>(tensorboard);
  using metrics_field::kStep, metrics_field::kTime;
  for (const OrderedJson& row : kept_rows)
    if (row.contains(kStep) && row[kStep].is_number_integer())
      events_->write_scalars(row.contains(kTime) && row[kTime].is_number() ? row[kTime].get<double>() : 0.0,
                             row[kStep].get<int64_t>(), tensorboard_scalars(row));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::write(const OrderedJson& row) {
  if (!file_) return;
  // The wall-clock time beside the training clock, to line the log up with other logs (run-records.md).
  OrderedJson timed = row;
  timed[metrics_field::kTime] = unix_seconds();
  const std::string line = timed.dump() + "\n";
  // The crash tests kill the process with half a line on disk (the resumed run drops it).
  const size_t half = line.size() / 2;
  bool ok = std::fwrite(line.data(), 1, half, file_) == half && std::fflush(file_) == 0;
  if (ok) fault_point("metrics.half_line");
  ok = ok && std::fwrite(line.data() + half, 1, line.size() - half, file_) == line.size() - half &&
       std::fflush(file_) == 0;
  check(ok, path_.string(), ": write failed: ", std::strerror(errno));
  using metrics_field::kStep;
  if (timed.contains(kStep) && timed[kStep].is_number_integer())
    events_->write_scalars(timed[metrics_field::kTime].get<double>(), timed[kStep].get<int64_t>(),
                           tensorboard_scalars(timed));
}

void MetricsWriter::event(int64_t step, double clock_seconds, const std::string& name, const std::string& detail) {
  using namespace metrics_field;
  write(OrderedJson{{kKind, metrics_kind::kEvent}, {kStep, step}, {kClockSeconds, clock_seconds}, {kEvent, name},
                    {kDetail, detail}});
}

}  // namespace ct
