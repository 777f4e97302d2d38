#include "harness/metrics.h"

#include <cmath>
#include <limits>
#include <set>

#include "harness/json_fields.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"

namespace ct {

namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

double optional_number(const FieldReader& r, const std::string& key) { return r.number_or_nan(key); }

// "time": wall-clock unix seconds, absent from logs written before it was added.
double optional_time(const FieldReader& r) { return r.has("time") ? r.non_negative("time") : NAN; }

void parse_record(const Json& j, const std::string& where, MetricsLog& log) {
  FieldReader r(j, where);
  std::string kind = r.string("kind");
  if (kind == "train") {
    TrainStepRecord s;
    s.step = r.integer("step", 0, kMaxCount);
    s.tokens = r.integer("tokens", 0, kMaxCount);
    s.clock_seconds = r.non_negative("clock_seconds");
    if (!r.has("loss")) r.fail_field("loss", "a number or null");
    s.loss = r.number_or_nan("loss");
    s.lr_factor = optional_number(r, "lr_factor");
    s.grad_norm = optional_number(r, "grad_norm");
    s.tokens_per_second = optional_number(r, "tokens_per_second");
    s.flops_per_second = optional_number(r, "flops_per_second");
    s.mfu = optional_number(r, "mfu");
    s.of_matmul_ceiling = optional_number(r, "of_matmul_ceiling");
    s.step_seconds = optional_number(r, "step_seconds");
    s.in_clock = r.has("in_clock") ? r.boolean("in_clock") : s.clock_seconds > 0;
    s.time = optional_time(r);
    log.train.push_back(s);
  } else if (kind == "eval") {
    EvalRecord e;
    e.step = r.integer("step", 0, kMaxCount);
    e.tokens = r.has("tokens") ? r.integer("tokens", 0, kMaxCount) : 0;
    e.clock_seconds = r.non_negative("clock_seconds");
    e.split = r.string_or("split", "heldout");
    if (!r.has("loss")) r.fail_field("loss", "a number or null");
    e.loss = r.number_or_nan("loss");
    e.time = optional_time(r);
    log.evals.push_back(e);
  } else if (kind == "event") {
    EventRecord e;
    e.step = r.integer("step", 0, kMaxCount);
    e.clock_seconds = r.has("clock_seconds") ? r.non_negative("clock_seconds") : 0;
    e.event = r.string("event");
    e.detail = r.string_or("detail", "");
    e.time = optional_time(r);
    log.events.push_back(e);
  } else {
    ++log.skipped_unknown_kind;
  }
}

}  // namespace

MetricsLog parse_metrics_jsonl(const std::string& text, const std::string& where) {
  MetricsLog log;
  size_t pos = 0;
  int64_t line_number = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    bool terminated = end != std::string::npos;
    if (!terminated) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string line_where = str(where, ":", line_number);
    Json j;
    try {
      j = Json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      if (!terminated) {
        log.truncated_last_line = true;  // a run killed mid-write
        break;
      }
      fail(line_where, ": invalid JSON at byte ", e.byte, " of the line");
    } catch (const nlohmann::json::exception& e) {
      fail(line_where, ": invalid JSON: ", e.what());  // e.g. a number out of range
    }
    parse_record(j, line_where, log);
  }
  return log;
}

MetricsLog read_metrics_file(const std::filesystem::path& path) {
  return parse_metrics_jsonl(read_file(path), path.string());
}

int64_t count_nonfinite_losses(const MetricsLog& log) {
  // Distinct steps with a non-finite loss, so a NaN step and its "nonfinite" event count once.
  std::set<int64_t> steps;
  for (const auto& s : log.train)
    if (!std::isfinite(s.loss)) steps.insert(s.step);
  for (const auto& e : log.evals)
    if (!std::isfinite(e.loss)) steps.insert(e.step);
  for (const auto& e : log.events)
    if (e.event == kEventNonFinite) steps.insert(e.step);
  return static_cast<int64_t>(steps.size());
}

std::optional<double> last_train_loss(const MetricsLog& log) {
  if (log.train.empty()) return std::nullopt;
  return log.train.back().loss;
}

std::optional<double> last_heldout_loss(const MetricsLog& log) {
  for (auto it = log.evals.rbegin(); it != log.evals.rend(); ++it)
    if (it->split == "heldout") return it->loss;
  return std::nullopt;
}

}  // namespace ct
