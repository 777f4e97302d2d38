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
double optional_time(const FieldReader& r) {
  return r.has(metrics_field::kTime) ? r.non_negative(metrics_field::kTime) : NAN;
}

void parse_record(const Json& j, const std::string& where, MetricsLog& log) {
  using namespace metrics_field;
  FieldReader r(j, where);
  std::string kind = r.string(kKind);
  if (kind == metrics_kind::kTrain) {
    TrainStepRecord s;
    s.step = r.integer(kStep, 0, kMaxCount);
    s.tokens = r.integer(kTokens, 0, kMaxCount);
    s.clock_seconds = r.non_negative(kClockSeconds);
    if (!r.has(kLoss)) r.fail_field(kLoss, "a number or null");
    s.loss = r.number_or_nan(kLoss);
    s.lr_factor = optional_number(r, kLrFactor);
    s.grad_norm = optional_number(r, kGradNorm);
    s.tokens_per_second = optional_number(r, kTokensPerSecond);
    s.flops_per_second = optional_number(r, kFlopsPerSecond);
    s.mfu = optional_number(r, kMfu);
    s.of_matmul_ceiling = optional_number(r, kOfMatmulCeiling);
    s.step_seconds = optional_number(r, kStepSeconds);
    s.in_clock = r.has(kInClock) ? r.boolean(kInClock) : s.clock_seconds > 0;
    s.time = optional_time(r);
    log.train.push_back(s);
  } else if (kind == metrics_kind::kEval) {
    EvalRecord e;
    e.step = r.integer(kStep, 0, kMaxCount);
    e.tokens = r.has(kTokens) ? r.integer(kTokens, 0, kMaxCount) : 0;
    e.clock_seconds = r.non_negative(kClockSeconds);
    e.split = r.string_or(kSplit, metrics_split::kHeldout);
    if (!r.has(kLoss)) r.fail_field(kLoss, "a number or null");
    e.loss = r.number_or_nan(kLoss);
    e.time = optional_time(r);
    log.evals.push_back(e);
  } else if (kind == metrics_kind::kEvent) {
    EventRecord e;
    e.step = r.integer(kStep, 0, kMaxCount);
    e.clock_seconds = r.has(kClockSeconds) ? r.non_negative(kClockSeconds) : 0;
    e.event = r.string(kEvent);
    e.detail = r.string_or(kDetail, "");
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
      j = json_from_text(line, line_where);
    } catch (const Error&) {
      if (terminated) throw;
      log.truncated_last_line = true;  // a run killed mid-write
      break;
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
    if (e.event == metrics_event::kNonFinite) steps.insert(e.step);
  return static_cast<int64_t>(steps.size());
}

std::optional<double> last_train_loss(const MetricsLog& log) {
  if (log.train.empty()) return std::nullopt;
  return log.train.back().loss;
}

std::optional<double> last_heldout_loss(const MetricsLog& log) {
  for (auto it = log.evals.rbegin(); it != log.evals.rend(); ++it)
    if (it->split == metrics_split::kHeldout) return it->loss;
  return std::nullopt;
}

}  // namespace ct
