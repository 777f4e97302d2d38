#include "harness/report.h"

#include <algorithm>
#include <cmath>

#include "clocktrain_version.h"
#include "harness/html.h"
#include "harness/report_style.h"
#include "harness/svg_chart.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/files.h"
#include "util/text_format.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

// The report's palette (never taken from a file).
constexpr const char* kBlue = "#2563eb";
constexpr const char* kOrange = "#ea580c";
constexpr const char* kGreen = "#16a34a";
constexpr const char* kPurple = "#9333ea";
constexpr const char* kTeal = "#0d9488";

constexpr size_t kMaxEventsShown = 200;

std::string esc(const std::string& s) { return xml_escape(s); }

std::string utc_time(double unix_seconds) {
  if (!std::isfinite(unix_seconds) || unix_seconds < 0 || unix_seconds > 253402300799.0) return "unknown time";
  return utc_text(unix_seconds, "%Y-%m-%d %H:%M UTC");
}

std::string card(const std::string& label, const std::string& value, const std::string& sub, bool hero = false,
                 bool bad = false) {
  std::string out = std::string("<div class=\"card") + (hero ? " hero" : "") + (bad ? " bad" : "") +
                    "\"><div class=\"label\">" + esc(label) + "</div><div class=\"value\">" + esc(value) + "</div>";
  if (!sub.empty()) out += "<div class=\"sub\">" + esc(sub) + "</div>";
  return out + "</div>";
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  return v[mid];
}

// Figures from the timed steps (clock started), where the one-time startup cost is excluded.
struct TimedFigures {
  double median_tokens_per_second = NAN;
  double mean_mfu = NAN;
  double mean_of_matmul_ceiling = NAN;
  double last_loss = NAN;
};

TimedFigures timed_figures(const MetricsLog& log) {
  TimedFigures f;
  std::vector<double> rates;
  double mfu_sum = 0, ceiling_sum = 0;
  size_t mfu_count = 0, ceiling_count = 0;
  for (const auto& s : steps_on_the_clock(log)) {
    if (std::isfinite(s.tokens_per_second)) rates.push_back(s.tokens_per_second);
    if (std::isfinite(s.mfu)) mfu_sum += s.mfu, ++mfu_count;
    if (std::isfinite(s.of_matmul_ceiling)) ceiling_sum += s.of_matmul_ceiling, ++ceiling_count;
  }
  f.median_tokens_per_second = median(rates);
  if (mfu_count) f.mean_mfu = mfu_sum / static_cast<double>(mfu_count);
  if (ceiling_count) f.mean_of_matmul_ceiling = ceiling_sum / static_cast<double>(ceiling_count);
  if (!log.train.empty()) f.last_loss = log.train.back().loss;
  return f;
}

// One level of a JSON object flattened to "a.b.c" = value rows.
void flatten_json(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& rows) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten_json(v, prefix.empty() ? k : prefix + "." + k, rows);
    return;
  }
  std::string value = j.is_string() ? j.get<std::string>() : j.dump(-1, ' ', false, Json::error_handler_t::replace);
  rows.emplace_back(prefix, value);
}

std::string header_section(const ReportInputs& in) {
  const auto& r = in.result;
  std::string title = r ? r->name : in.title;
  std::string badge = !r              ? "<span class=\"badge none\">NO RESULT</span>"
                      : r->gate.eligible ? "<span class=\"badge pass\">ELIGIBLE</span>"
                                         : "<span class=\"badge fail\">NOT ELIGIBLE</span>";
  std::string out = "<header class=\"top\"><h1>" + esc(title) + "</h1>" + badge + "</header>";
  std::string subtitle;
  if (r) {
    subtitle = "recipe " + r->recipe.path + " \xC2\xB7 seed " + std::to_string(r->seed) + " \xC2\xB7 round " +
               std::to_string(r->round) + " \xC2\xB7 " + utc_time(r->created_unix);
    if (!r->run_dir.empty()) subtitle += " \xC2\xB7 " + r->run_dir;
  } else {
    subtitle = "no result.json yet: the page shows what metrics.jsonl holds";
  }
  out += "<p class=\"subtitle\">" + esc(subtitle) + "</p>";
  if (!in.notes.empty() || in.metrics.truncated_last_line || in.metrics.skipped_unknown_kind) {
    out += "<div class=\"notes\">";
    for (const auto& n : in.notes) out += "<p>" + esc(n) + "</p>";
    if (in.metrics.truncated_last_line) out += "<p>metrics.jsonl ends in an unfinished line (skipped).</p>";
    if (in.metrics.skipped_unknown_kind)
      out += "<p>" + esc(str(in.metrics.skipped_unknown_kind, " record(s) of an unknown kind skipped.")) + "</p>";
    out += "</div>";
  }
  return out;
}

std::string cards_section(const ReportInputs& in) {
  const auto& r = in.result;
  TimedFigures f = timed_figures(in.metrics);
  std::string out = "<div class=\"cards\">";
  if (r) {
    out += card("val_bpb", r->val_bpb ? format_fixed(*r->val_bpb, 4) : "not finite", "bits per byte, pinned val set",
                true, !r->val_bpb);
    out += card(r->core ? r->core->label : "CORE", r->core ? format_fixed(r->core->core, 4) : "not run",
                r->core ? str(r->core->tasks.size(), " tasks") : "", true);
    out += card("parameters", format_si(static_cast<double>(r->parameters)), format_count(r->parameters));
    out += card("training clock", format_duration(r->train_clock_seconds),
                "budget " + format_duration(r->budget_seconds));
    out += card("startup", format_duration(r->startup_seconds), "cap " + format_duration(r->startup_cap_seconds));
    out += card("steps", format_count(r->steps), format_si(static_cast<double>(r->tokens)) + " tokens");
  } else if (!in.metrics.train.empty()) {
    const auto& last = in.metrics.train.back();
    out += card("last loss", format_fixed(last.loss, 4), "step " + format_count(last.step), true);
    out += card("training clock", format_duration(last.clock_seconds), "");
    out += card("steps", format_count(last.step), format_si(static_cast<double>(last.tokens)) + " tokens");
  }
  out += card("throughput", std::isfinite(f.median_tokens_per_second) ? format_si(f.median_tokens_per_second) : "-",
              "tokens/s, median of timed steps");
  out += card("MFU", std::isfinite(f.mean_mfu) ? format_fixed(f.mean_mfu * 100, 1) + "%" : "-",
              "of the theoretical peak, mean of timed steps");
  out += card("of matmul ceiling",
              std::isfinite(f.mean_of_matmul_ceiling) ? format_fixed(f.mean_of_matmul_ceiling * 100, 1) + "%" : "-",
              "of the measured GEMM rate, mean of timed steps");
  if (r && !r->device.matmul_precision.empty())
    out += card("matmuls", r->device.matmul_precision, r->device.matmul_precision_reason);
  return out + "</div>";
}

std::string charts_section(const ReportInputs& in) {
  const MetricsLog& m = in.metrics;
  const std::vector<TrainStepRecord> timed = steps_on_the_clock(m);
  const size_t startup_steps = m.train.size() - timed.size();
  std::vector<double> clock, loss, lr, grad, rate, mfu;
  for (const auto& s : timed) {
    clock.push_back(s.clock_seconds);
    loss.push_back(s.loss);
    lr.push_back(s.lr_factor);
    grad.push_back(s.grad_norm);
    rate.push_back(s.tokens_per_second);
    mfu.push_back(s.mfu);
  }
  std::vector<double> eval_clock, eval_loss;
  for (const auto& e : m.evals)
    if (e.split == metrics_split::kHeldout) eval_clock.push_back(e.clock_seconds), eval_loss.push_back(e.loss);
  std::vector<ChartMarker> budget;
  if (in.result) budget.push_back({in.result->budget_seconds, "budget"});

  LineChart loss_chart;
  loss_chart.title = "Loss";
  loss_chart.x_label = "training clock";
  loss_chart.y_label = "cross-entropy (nats/token)";
  loss_chart.width = 1080;
  loss_chart.height = 340;
  loss_chart.series = {{"train", kBlue, clock, loss, false, false}};
  if (!eval_loss.empty()) loss_chart.series.push_back({"held-out", kOrange, eval_clock, eval_loss, false, true});
  loss_chart.x_markers = budget;

  LineChart rate_chart;
  rate_chart.title = "Throughput";
  rate_chart.x_label = "training clock";
  rate_chart.y_label = "tokens/s";
  rate_chart.y_format = AxisFormat::si;
  rate_chart.y_from_zero = true;
  rate_chart.series = {{"tokens/s", kGreen, clock, rate, false, false}};
  rate_chart.x_markers = budget;

  LineChart mfu_chart;
  mfu_chart.title = "Model FLOPs utilisation";
  mfu_chart.x_label = "training clock";
  mfu_chart.y_label = "MFU";
  mfu_chart.y_format = AxisFormat::percent;
  mfu_chart.y_from_zero = true;
  mfu_chart.series = {{"MFU", kPurple, clock, mfu, false, false, /*mark_nonfinite=*/false}};
  mfu_chart.empty_text = "MFU not recorded (the backend's peak is unknown)";
  mfu_chart.x_markers = budget;

  LineChart lr_chart;
  lr_chart.title = "Learning-rate factor";
  lr_chart.x_label = "training clock";
  lr_chart.y_label = "factor";
  lr_chart.y_from_zero = true;
  lr_chart.series = {{"lr factor", kTeal, clock, lr, false, false}};
  lr_chart.x_markers = budget;

  LineChart grad_chart;
  grad_chart.title = "Gradient norm";
  grad_chart.x_label = "training clock";
  grad_chart.y_label = "global L2 norm";
  grad_chart.y_from_zero = true;
  grad_chart.series = {{"grad norm", kOrange, clock, grad, false, false}};
  grad_chart.x_markers = budget;

  std::string out = "<section id=\"training\"><h2>Training</h2><div class=\"charts\">";
  out += "<div class=\"wide\">" + render_line_chart(loss_chart) + "</div>";
  for (const auto* c : {&rate_chart, &mfu_chart, &lr_chart, &grad_chart})
    out += "<div>" + render_line_chart(*c) + "</div>";
  out += "</div>";
  if (m.train.empty()) {
    out += "<p class=\"muted\">metrics.jsonl holds no training step.</p>";
  } else if (startup_steps) {
    out += "<p class=\"muted\">" +
           esc(str("The charts leave out the ", startup_steps,
                   " startup step(s), which ran before the training clock started (their time carries one-time "
                   "compilation and is not on the clock); the held-out losses are drawn at the clock they were "
                   "taken.")) +
           "</p>";
  }
  return out + "</section>";
}

std::string gate_section(const RunResult& r) {
  std::string out = "<section id=\"gate\"><h2>Correctness gate</h2>";
  auto failed = r.gate.failed_checks();
  out += std::string("<p class=\"gate-summary\">") +
         (r.gate.eligible ? "<span class=\"pill pass\">ELIGIBLE</span> every check passed."
                          : "<span class=\"pill fail\">NOT ELIGIBLE</span> " +
                                esc(str(failed.size(), " of ", r.gate.checks.size(), " check(s) failed."))) +
         "</p>";
  out += "<table><thead><tr><th>check</th><th>verdict</th><th>evidence</th></tr></thead><tbody>";
  for (const auto& c : r.gate.checks) {
    out += "<tr><td class=\"name\">" + esc(c.name) + "</td><td>" +
           (c.passed ? "<span class=\"pill pass\">PASS</span>" : "<span class=\"pill fail\">FAIL</span>") + "</td><td>" +
           esc(c.evidence) + "</td></tr>";
  }
  return out + "</tbody></table></section>";
}

// A horizontal bar for a centered CORE score: zero in the middle of a [-scale, scale] range.
std::string centered_bar(double value, double scale) {
  const double width = 140, mid = 70;
  double v = std::isfinite(value) ? std::clamp(value / scale, -1.0, 1.0) : 0;
  double length = std::fabs(v) * (width / 2 - 2);
  double x = v >= 0 ? mid : mid - length;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"bar\" viewBox=\"0 0 140 14\">"
                "<rect x=\"0\" y=\"3\" width=\"140\" height=\"8\" rx=\"2\" fill=\"#f1f5f9\"/>"
                "<rect x=\"%.1f\" y=\"3\" width=\"%.1f\" height=\"8\" rx=\"2\" fill=\"%s\"/>"
                "<line x1=\"70\" y1=\"0\" x2=\"70\" y2=\"14\" stroke=\"#9ca3af\"/></svg>",
                x, length, v >= 0 ? kBlue : kOrange);
  return buf;
}

std::string scores_section(const RunResult& r) {
  std::string out = "<section id=\"scores\"><h2>Scores</h2><div class=\"two\"><div>";
  out += "<h2>val_bpb</h2><dl class=\"kv\">";
  out += "<dt>val_bpb</dt><dd>" + esc(r.val_bpb ? format_fixed(*r.val_bpb, 6) : "null") + "</dd>";
  if (r.val) {
    out += "<dt>nats</dt><dd>" + esc(format_fixed(r.val->nats, 1)) + "</dd>";
    out += "<dt>bytes</dt><dd>" + esc(format_count(static_cast<int64_t>(r.val->bytes))) + "</dd>";
    out += "<dt>tokens</dt><dd>" + esc(format_count(static_cast<int64_t>(r.val->tokens))) + "</dd>";
    out += "<dt>time</dt><dd>" + esc(format_duration(r.val->seconds)) + "</dd>";
  }
  out += "</dl><p class=\"muted\">val_bpb = nats / (ln 2 \xC2\xB7 bytes) over the pinned validation documents, "
         "recomputed from the saved checkpoint.</p></div><div>";
  if (r.core) {
    const CoreScore& c = *r.core;
    out += "<h2>" + esc(c.label) + "</h2><dl class=\"kv\"><dt>score</dt><dd>" + esc(format_fixed(c.core, 4)) +
           "</dd><dt>time</dt><dd>" + esc(format_duration(c.seconds)) + "</dd>";
    if (!c.missing_tasks.empty()) {
      std::string missing;
      for (const auto& t : c.missing_tasks) missing += (missing.empty() ? "" : ", ") + t;
      out += "<dt>missing</dt><dd>" + esc(missing) + "</dd>";
    }
    out += "</dl><p class=\"muted\">CORE = mean over tasks of (accuracy \xE2\x88\x92 random baseline) / "
           "(1 \xE2\x88\x92 random baseline).</p>";
  } else {
    out += "<h2>CORE</h2><p class=\"muted\">CORE was not run.</p>";
  }
  out += "</div></div>";
  if (r.core && !r.core->tasks.empty()) {
    double scale = 0.05;
    for (const auto& t : r.core->tasks)
      if (std::isfinite(t.centered)) scale = std::max(scale, std::fabs(t.centered));
    bool any_clamped = false;
    for (const auto& t : r.core->tasks) any_clamped |= t.clamped_rows > 0 || t.prefix_mismatch_rows > 0;
    out += "<table><thead><tr><th>task</th><th>type</th><th class=\"num\">shots</th><th class=\"num\">rows</th>"
           "<th class=\"num\">accuracy</th><th class=\"num\">centered</th><th></th><th class=\"num\">time</th>";
    if (any_clamped) out += "<th class=\"num\">clamped</th><th class=\"num\">prefix mismatch</th>";
    out += "</tr></thead><tbody>";
    for (const auto& t : r.core->tasks) {
      out += "<tr><td class=\"name\">" + esc(t.label) + "</td><td>" + esc(t.type) + "</td><td class=\"num\">" +
             std::to_string(t.shots) + "</td><td class=\"num\">" + esc(format_count(t.rows)) + "</td><td class=\"num\">" +
             esc(format_fixed(t.accuracy, 4)) + "</td><td class=\"num\">" + esc(format_fixed(t.centered, 4)) +
             "</td><td>" + centered_bar(t.centered, scale) + "</td><td class=\"num\">" +
             esc(format_duration(t.seconds)) + "</td>";
      if (any_clamped)
        out += "<td class=\"num\">" + std::to_string(t.clamped_rows) + "</td><td class=\"num\">" +
               std::to_string(t.prefix_mismatch_rows) + "</td>";
      out += "</tr>";
    }
    out += "<tr class=\"total\"><td>" + esc(r.core->label) + "</td><td></td><td></td><td></td><td></td><td class=\"num\">" +
           esc(format_fixed(r.core->core, 4)) + "</td><td>" + centered_bar(r.core->core, scale) +
           "</td><td class=\"num\">" + esc(format_duration(r.core->seconds)) + "</td>";
    if (any_clamped) out += "<td></td><td></td>";
    out += "</tr></tbody></table>";
  }
  return out + "</section>";
}

// `clocktrain run --plan` (docs/plan.md): the plan's prediction beside the measured val_bpb, and its
// candidates. Fields of the wrong type are shown as missing, not trusted.
std::string plan_section(const RunResult& r) {
  if (!r.extra.contains("plan") || !r.extra["plan"].is_object()) return "";
  const Json& p = r.extra["plan"];
  auto number = [](const Json& j, const char* key) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::nan("");
  };
  auto fixed = [](double x, int decimals) { return std::isfinite(x) ? format_fixed(x, decimals) : std::string("-"); };
  const double predicted = number(p, "predicted_val_bpb");
  double low = std::nan(""), high = std::nan("");
  if (p.contains("interval") && p["interval"].is_array() && p["interval"].size() == 2 && p["interval"][0].is_number() &&
      p["interval"][1].is_number()) {
    low = p["interval"][0].get<double>();
    high = p["interval"][1].get<double>();
  }
  std::string verdict = "not scored";
  if (r.val_bpb && std::isfinite(low))
    verdict = *r.val_bpb >= low && *r.val_bpb <= high ? "inside the interval" : "outside the interval";
  std::string out = "<section id=\"plan\"><h2>Plan</h2><dl class=\"kv\">";
  out += "<dt>depth</dt><dd>" + esc(fixed(number(p, "depth"), 0)) + "</dd>";
  out += "<dt>predicted val_bpb</dt><dd>" + esc(fixed(predicted, 4) + " [" + fixed(low, 4) + ", " + fixed(high, 4) + "]") +
         "</dd>";
  out += "<dt>measured val_bpb</dt><dd>" + esc((r.val_bpb ? format_fixed(*r.val_bpb, 4) : "-") + ", " + verdict) + "</dd>";
  const double planning = number(p, "planning_seconds");
  out += "<dt>planning</dt><dd>" + esc(std::isfinite(planning) ? format_duration(planning) : "-") +
         " (counted as startup)</dd>";
  out += "</dl>";
  if (p.contains("candidates") && p["candidates"].is_array()) {
    out += "<table><thead><tr><th class=\"num\">depth</th><th class=\"num\">parameters</th><th class=\"num\">step s</th>"
           "<th class=\"num\">tokens planned</th><th class=\"num\">predicted val_bpb</th></tr></thead><tbody>";
    for (const Json& c : p["candidates"]) {
      if (!c.is_object()) continue;
      out += "<tr><td class=\"num\">" + esc(fixed(number(c, "depth"), 0)) + "</td><td class=\"num\">" +
             esc(fixed(number(c, "parameters"), 0)) + "</td><td class=\"num\">" + esc(fixed(number(c, "step_seconds"), 3)) +
             "</td><td class=\"num\">" + esc(fixed(number(c, "tokens"), 0)) + "</td><td class=\"num\">" +
             esc(fixed(number(c, "predicted_val_bpb"), 4)) + "</td></tr>";
    }
    out += "</tbody></table>";
  }
  out += "<p class=\"muted\">The planner's prediction from the loss model (docs/plan.md); the interval is the largest "
         "held-out error of its fit. Tokens trained: " + esc(format_count(r.tokens)) + ".</p></section>";
  return out;
}

std::string events_section(const MetricsLog& m) {
  if (m.events.empty()) return "";
  std::string out = "<section id=\"events\"><h2>Events</h2><table><thead><tr><th class=\"num\">step</th>"
                    "<th class=\"num\">clock</th><th>event</th><th>detail</th></tr></thead><tbody>";
  for (size_t i = 0; i < m.events.size() && i < kMaxEventsShown; ++i) {
    const auto& e = m.events[i];
    out += "<tr><td class=\"num\">" + esc(format_count(e.step)) + "</td><td class=\"num\">" +
           esc(format_duration(e.clock_seconds)) + "</td><td class=\"name\">" + esc(e.event) + "</td><td>" +
           esc(e.detail) + "</td></tr>";
  }
  out += "</tbody></table>";
  if (m.events.size() > kMaxEventsShown)
    out += "<p class=\"muted\">" + esc(str(m.events.size() - kMaxEventsShown, " more event(s) not shown.")) + "</p>";
  return out + "</section>";
}

std::string recipe_section(const ReportInputs& in) {
  if (!in.result && in.recipe_text.empty()) return "";
  std::string out = "<section id=\"recipe\"><h2>Recipe</h2>";
  if (in.result) {
    const RecipeRef& rr = in.result->recipe;
    out += "<dl class=\"kv\"><dt>file</dt><dd class=\"mono\">" + esc(rr.path) + "</dd><dt>sha256</dt><dd class=\"mono\">" +
           esc(rr.sha256) + "</dd></dl>";
  }
  std::vector<std::pair<std::string, std::string>> rows;
  if (in.result) flatten_json(in.result->recipe.resolved, "", rows);
  bool has_table = !rows.empty() && !(rows.size() == 1 && rows[0].first.empty());
  out += (has_table && !in.recipe_text.empty()) ? "<div class=\"two\">" : "<div>";
  if (has_table) {
    out += "<div><table><thead><tr><th>setting (resolved)</th><th>value</th></tr></thead><tbody>";
    for (const auto& [k, v] : rows) out += "<tr><td class=\"mono\">" + esc(k) + "</td><td class=\"mono\">" + esc(v) + "</td></tr>";
    out += "</tbody></table></div>";
  }
  if (!in.recipe_text.empty()) out += "<div><pre>" + esc(in.recipe_text) + "</pre></div>";
  return out + "</div></section>";
}

std::string machine_section(const RunResult& r) {
  std::string out = "<section id=\"machine\"><h2>Machine, binary and data</h2><div class=\"two\"><div><dl class=\"kv\">";
  out += "<dt>backend</dt><dd>" + esc(r.device.backend) + "</dd>";
  out += "<dt>device</dt><dd>" + esc(r.device.description) + "</dd>";
  out += "<dt>devices</dt><dd>" + std::to_string(r.device.devices) + "</dd>";
  out += "<dt>threads</dt><dd>" + std::to_string(r.device.threads) + "</dd>";
  if (!r.device.matmul_precision.empty()) {
    out += "<dt>matmuls</dt><dd>" + esc(r.device.matmul_precision_reason) + "</dd>";
    out += "<dt>theoretical peak</dt><dd>" + esc(format_fixed(r.device.peak_flops / 1e9, 1)) + " GFLOP/s</dd>";
    out += "<dt>matmul ceiling</dt><dd>" +
           (r.device.matmul_ceiling_flops > 0
                ? esc(format_fixed(r.device.matmul_ceiling_flops / 1e9, 1)) + " GFLOP/s (measured)"
                : std::string("not measured on this backend")) +
           "</dd>";
  }
  out += "<dt>binary</dt><dd class=\"mono\">" + esc(r.binary.version) + "</dd>";
  out += "<dt>build</dt><dd class=\"mono\">" + esc(r.binary.build_flags) + "</dd>";
  out += "<dt>manifest</dt><dd class=\"mono\">" + esc(r.data.manifest_sha256) + "</dd>";
  out += "</dl><table><thead><tr><th>environment variable</th><th>value</th></tr></thead><tbody>";
  if (r.environment.empty()) out += "<tr><td class=\"muted\">none recorded</td><td></td></tr>";
  for (const auto& [k, v] : r.environment)
    out += "<tr><td class=\"mono\">" + esc(k) + "</td><td class=\"mono\">" + esc(v) + "</td></tr>";
  out += "</tbody></table></div><div><table><thead><tr><th>shard read</th><th>sha256</th></tr></thead><tbody>";
  if (r.data.shards_read.empty()) out += "<tr><td class=\"muted\">none recorded</td><td></td></tr>";
  for (const auto& s : r.data.shards_read)
    out += "<tr><td class=\"name\">" + esc(s.name) + "</td><td class=\"mono\" title=\"" + esc(s.sha256) + "\">" +
           esc(s.sha256.substr(0, 16)) + "\xE2\x80\xA6</td></tr>";
  return out + "</tbody></table></div></div></section>";
}

}  // namespace

std::vector<TrainStepRecord> steps_on_the_clock(const MetricsLog& log) {
  std::vector<TrainStepRecord> timed;
  for (const auto& s : log.train)
    if (s.in_clock) timed.push_back(s);
  return timed;
}

std::string render_report_html(const ReportInputs& in) {
  std::string title = in.result ? in.result->name : in.title;
  std::string out;
  out += "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
         "<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  out += "<title>" + esc(title) + " \xE2\x80\x94 clocktrain report</title>\n";
  out += std::string("<style>") + kReportCss + "</style>\n</head>\n<body>\n<main>\n";
  out += header_section(in);
  out += cards_section(in);
  out += charts_section(in);
  if (in.result) {
    out += gate_section(*in.result);
    out += scores_section(*in.result);
    out += plan_section(*in.result);
  }
  out += events_section(in.metrics);
  out += recipe_section(in);
  if (in.result) out += machine_section(*in.result);
  const std::string sources = in.metrics_read && in.result ? str(kMetricsFileName, " and ", kResultFileName)
                              : in.metrics_read           ? std::string(kMetricsFileName)
                                                          : std::string(kResultFileName);
  out += "<footer>" + esc(str("report drawn by clocktrain ", kVersion, " from ", sources)) +
         "</footer>\n</main>\n</body>\n</html>\n";
  return out;
}

fs::path write_run_report(const fs::path& run_dir, const fs::path& out) {
  std::error_code ec;
  check(fs::is_directory(run_dir, ec), run_dir.string(), ": not a run folder");
  ReportInputs in;
  in.title = fs::absolute(run_dir).lexically_normal().filename().string();
  if (in.title.empty()) in.title = fs::absolute(run_dir).lexically_normal().parent_path().filename().string();
  fs::path metrics = run_dir / kMetricsFileName;
  fs::path result = run_dir / kResultFileName;
  if (fs::is_regular_file(metrics, ec)) {
    in.metrics = read_metrics_file(metrics);
  } else {
    // `clocktrain run` whose backend could not start writes result.json alone (docs/run.md).
    check(fs::exists(result, ec), run_dir.string(), ": neither ", kMetricsFileName, " nor ", kResultFileName,
          ": not a run folder");
    in.metrics_read = false;
    in.notes.push_back("metrics.jsonl is missing: training never started (result.json says why).");
  }
  if (fs::exists(result, ec)) {
    in.result = read_result_file(result);
    // What `clocktrain run` noted on the way (docs/run-records.md: notes), shown at the top.
    const Json& extra = in.result->extra;
    if (extra.contains("notes") && extra.at("notes").is_array())
      for (const auto& n : extra.at("notes"))
        if (n.is_string()) in.notes.push_back(n.get<std::string>());
  } else
    in.notes.push_back("result.json is missing: the run is in progress, failed before evaluation, or was killed.");
  fs::path recipe = run_dir / kRecipeCopyFileName;
  if (fs::is_regular_file(recipe, ec)) in.recipe_text = read_file(recipe);
  fs::path target = out.empty() ? run_dir / kReportFileName : out;
  write_file_atomic(target, render_report_html(in));
  return target;
}

}  // namespace ct
