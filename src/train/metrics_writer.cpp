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
  if (!row.is_object() || !row.contains("kind") || !row["kind"].is_string()) return out;
  auto add = [&](const char* field, const std::string& tag) {
    if (row.contains(field) && row[field].is_number()) out.emplace_back(tag, row[field].get<float>());
  };
  const std::string kind = row["kind"].get<std::string>();
  if (kind == "train") {
    for (const char* field : {"loss", "lr_factor", "grad_norm", "tokens_per_second", "mfu", "step_seconds"})
      add(field, str("train/", field));
  } else if (kind == "eval") {
    const std::string split = row.contains("split") && row["split"].is_string() ? row["split"].get<std::string>() : "eval";
    add("loss", "eval/" + split + "_loss");
    add("val_bpb", "eval/val_bpb");
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
        row = OrderedJson::parse(line);
      } catch (const nlohmann::json::exception&) {
        // A line cut by the crash that the resumed run continues from (parse_error), or one that
        // no run wrote (out_of_range: a number beyond double).
        continue;
      }
      if (keep_through_step >= 0 && row.contains("step") && row["step"].is_number_integer() &&
          row["step"].get<int64_t>() > keep_through_step)
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
  for (const OrderedJson& row : kept_rows)
    if (row.contains("step") && row["step"].is_number_integer())
      events_->write_scalars(row.contains("time") && row["time"].is_number() ? row["time"].get<double>() : 0.0,
                             row["step"].get<int64_t>(), tensorboard_scalars(row));
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
  if (timed.contains("step") && timed["step"].is_number_integer())
    events_->write_scalars(timed["time"].get<double>(), timed["step"].get<int64_t>(), tensorboard_scalars(timed));
}

void MetricsWriter::event(int64_t step, double clock_seconds, const std::string& name, const std::string& detail) {
  write(OrderedJson{{"kind", "event"}, {"step", step}, {"clock_seconds", clock_seconds}, {"event", name},
                    {"detail", detail}});
}

}  // namespace ct
