// lab report: the ledger drawn into one self-contained HTML page (inline SVG and CSS, no scripts,
// no network): experiments and verdicts, runs over time with noise bands, and the elasticity fits.
#include <cmath>
#include <map>
#include <set>

#include "harness/html.h"
#include "harness/svg_chart.h"
#include "lab/elasticity.h"
#include "lab/formatting.h"
#include "lab/lab_commands.h"
#include "lab/noise.h"
#include "lab/run_selection.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/files.h"
#include "util/text_table.h"

namespace ct::lab {

namespace {

std::string cell(const std::string& text) { return "<td>" + xml_escape(text) + "</td>"; }

std::string experiments_section(Ledger& ledger) {
  auto verdicts = ledger.verdicts();
  std::string html = "<h2>Experiments</h2>\n<table><tr><th>id</th><th>opened (UTC)</th><th>change</th>"
                     "<th>hypothesis</th><th>predicted</th><th>rule</th><th>runs</th><th>latest verdict</th>"
                     "<th>d</th><th>interval</th><th>MDE</th></tr>\n";
  for (const auto& e : ledger.experiments()) {
    const StoredVerdict* latest = nullptr;
    for (const auto& v : verdicts)
      if (v.experiment_id == e.id) latest = &v;
    auto number = [&](const char* key) {
      return latest && latest->numbers.contains(key) && latest->numbers[key].is_number()
                 ? format_fixed(latest->numbers[key].get<double>(), 5)
                 : std::string("-");
    };
    std::string interval = "-";
    if (latest && latest->numbers.contains("interval") && latest->numbers["interval"].size() == 2)
      interval = "[" + format_fixed(latest->numbers["interval"][0].get<double>(), 5) + ", " +
                 format_fixed(latest->numbers["interval"][1].get<double>(), 5) + "]";
    std::string verdict = latest ? latest->verdict + " (" + std::string(rung_name(latest->rung)) + ")" : "-";
    html += "<tr>" + cell(std::to_string(e.id)) + cell(format_unix_time(e.created_unix)) + cell(e.change) +
            cell(e.hypothesis) +
            cell(format_fixed(e.predicted_effect, 4) + " [" + format_fixed(e.predicted_low, 4) + ", " +
                 format_fixed(e.predicted_high, 4) + "]") +
            cell(e.rule_text) + cell(std::to_string(ledger.runs(e.id).size())) + "<td class=\"" +
            (latest ? latest->verdict : std::string("none")) + "\">" + xml_escape(verdict) + "</td>" +
            cell(number("effect")) + cell(interval) + cell(number("mde")) + "</tr>\n";
  }
  return html + "</table>\n";
}

// Runs over time, one series per recipe; a band of mean +- 1 single-run std for each configuration
// with 2 or more seeds, spanning the time of its runs.
std::string runs_over_time_section(const std::vector<StoredRun>& all_runs) {
  ScatterChart chart;
  chart.title = "val_bpb of every run over time";
  chart.x_label = "recorded (UTC)";
  chart.y_label = "val_bpb";
  chart.x_is_unix_time = true;
  std::map<std::string, size_t> series_of_recipe;
  for (const auto& r : all_runs) {
    if (!r.record.val_bpb) continue;
    auto [it, added] = series_of_recipe.emplace(r.record.name, chart.series.size());
    if (added) chart.series.push_back({r.record.name, palette_color(chart.series.size()), {}, false, true});
    chart.series[it->second].points.push_back(
        {r.recorded_unix, *r.record.val_bpb,
         str("run ", r.id, " exp ", r.experiment_id, " arm ", r.arm, " ", rung_name(r.rung), " seed ", r.record.seed,
             " val_bpb ", format_fixed(*r.record.val_bpb, 5), r.excluded_reason ? " (excluded)" : "")});
  }
  std::vector<StoredRun> usable;
  for (const auto& r : all_runs)
    if (usable_for_statistics(r, "val_bpb")) usable.push_back(r);
  auto groups = group_by_configuration(usable);
  std::string table = "<table><tr><th>configuration</th><th>runs</th><th>seeds</th><th>mean</th>"
                      "<th>seed spread</th><th>pair noise</th><th>single-run sd</th><th>MDE n=4 (different seeds)</th>"
                      "<th>MDE n=4 (same seeds)</th></tr>\n";
  for (const auto& g : groups) {
    std::vector<SeededValue> values;
    double t0 = 1e300, t1 = -1e300;
    for (const auto* r : g.runs) {
      values.push_back({r->record.seed, *r->record.val_bpb});
      t0 = std::min(t0, r->recorded_unix);
      t1 = std::max(t1, r->recorded_unix);
    }
    NoiseEstimate n = estimate_noise(values);
    std::string label = configuration_label(g, groups);
    if (n.single_run_std) {
      size_t color = series_of_recipe.count(g.runs.front()->record.name) ? series_of_recipe[g.runs.front()->record.name] : 0;
      chart.bands.push_back({label + ": mean " + format_fixed(n.mean, 5) + " +- " + format_fixed(*n.single_run_std, 5),
                             palette_color(color), t0 - 30, t1 + 30, n.mean - *n.single_run_std,
                             n.mean + *n.single_run_std, 0.3});
    }
    if (n.seeds < 2 && !n.pair_noise) continue;
    MdeRow mde = mde_for(n, 4, 0.95, 0.8);
    table += "<tr>" + cell(label) + cell(std::to_string(n.runs)) + cell(std::to_string(n.seeds)) +
             cell(format_fixed(n.mean, 5)) + cell(format_optional(n.seed_spread, 5)) +
             cell(format_optional(n.pair_noise, 5)) + cell(format_optional(n.single_run_std, 5)) +
             cell(format_optional(mde.unpaired, 5)) + cell(format_optional(mde.paired, 5)) + "</tr>\n";
  }
  return "<h2>Runs over time</h2>\n<p>One point per run (hover for its id, experiment, arm, rung and seed). "
         "Shaded: mean +- 1 single-run sd of each configuration with 2 or more seeds, over the time of its runs.</p>\n" +
         render_scatter_chart(chart) +
         "<h2>Noise</h2>\n<p>Per configuration (every input equal but the seed); MDE at 95% confidence, power 0.8, "
         "4 runs per arm (docs/lab.md gives the formulas).</p>\n" +
         table + "</table>\n";
}

std::string elasticity_section(Ledger& ledger, const std::vector<StoredRun>& all_runs) {
  std::set<std::string> recipes;
  for (const auto& r : all_runs) recipes.insert(r.record.name);
  std::string html = "<h2>Elasticity</h2>\n";
  int drawn = 0;
  for (const auto& recipe : recipes) {
    // Timed runs only (smoke and full), eligible, with a step count.
    auto runs = runs_of_recipe(ledger, recipe, std::nullopt);
    std::erase_if(runs, [](const StoredRun& r) {
      auto steps = metric_value(r.record, "steps");
      return (r.rung != Rung::smoke && r.rung != Rung::full) || !usable_for_statistics(r, "val_bpb") || !steps ||
             *steps <= 0;
    });
    std::set<double> budgets;
    for (const auto& r : runs)
      if (auto b = metric_value(r.record, "budget_seconds")) budgets.insert(*b);
    bool by_budget = budgets.size() >= 2;
    std::vector<ElasticityPoint> points;
    for (const auto& r : runs) {
      auto level = metric_value(r.record, by_budget ? "budget_seconds" : "steps");
      if (level) points.push_back({*level, std::log(*metric_value(r.record, "steps")), *r.record.val_bpb, r.id});
    }
    std::set<double> levels;
    for (const auto& p : points) levels.insert(p.level);
    if (levels.size() < 2) continue;
    ElasticityFit fit = fit_elasticity(points);
    ScatterChart chart;
    chart.title = recipe + ": val_bpb against ln(steps), one line per range";
    chart.x_label = "ln(steps)";
    chart.y_label = "val_bpb";
    ScatterSeries runs_series{"runs", palette_color(0), {}, false, true};
    for (const auto& p : fit.points)
      runs_series.points.push_back({p.x, p.y, str("run ", p.run_id, " level ", p.level, " steps ", std::exp(p.x))});
    chart.series.push_back(runs_series);
    std::string table = "<table><tr><th>range</th><th>from</th><th>to</th><th>points</th><th>slope</th>"
                        "<th>std error</th><th>delta bpb for +5% speed</th></tr>\n";
    for (size_t i = 0; i < fit.ranges.size(); ++i) {
      const auto& range = fit.ranges[i];
      ScatterSeries line{str("range ", i + 1, " slope ", format_fixed(range.fit.slope, 4)), palette_color(i + 1), {}, true,
                       false};
      for (double x : {range.low.mean_x, range.high.mean_x})
        line.points.push_back({x, range.fit.intercept + range.fit.slope * x, ""});
      chart.series.push_back(line);
      table += "<tr>" + cell(std::to_string(i + 1)) + cell(format_fixed(range.low.level, 0)) +
               cell(format_fixed(range.high.level, 0)) + cell(std::to_string(range.fit.points)) +
               cell(format_fixed(range.fit.slope, 5)) +
               cell(std::isfinite(range.fit.slope_standard_error) ? format_fixed(range.fit.slope_standard_error, 5)
                                                                  : "n/a") +
               cell(format_fixed(range.fit.slope * std::log1p(0.05), 5)) + "</tr>\n";
    }
    html += "<p>" + xml_escape(recipe) + ": smoke and full runs grouped by " +
            (by_budget ? std::string("budget") : std::string("step count")) +
            "; each pair of adjacent levels is a range with its own least-squares slope.</p>\n" + render_scatter_chart(chart) +
            table + "</table>\n";
    ++drawn;
  }
  if (!drawn) html += "<p>No recipe has eligible smoke or full runs at two or more budgets yet.</p>\n";
  return html;
}

}  // namespace

void lab_report(const fs::path& ledger_path, const fs::path& out_file, std::ostream& out) {
  Ledger ledger(ledger_path, false);
  auto runs = ledger.runs();
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>clocktrain lab report</title>\n<style>"
      "body{font-family:sans-serif;margin:24px;max-width:1200px}table{border-collapse:collapse;margin:8px 0 20px}"
      "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#f3f3f3}"
      "td.accept{background:#dff0d8}td.reject{background:#f2dede}td.inconclusive{background:#fcf8e3}"
      "</style></head><body>\n<h1>clocktrain lab</h1>\n<p>Ledger " +
      xml_escape(fs::absolute(ledger_path).string()) + ", " + std::to_string(runs.size()) + " runs; generated " +
      format_unix_time(unix_seconds()) + " UTC.</p>\n";
  html += experiments_section(ledger);
  html += runs_over_time_section(runs);
  html += elasticity_section(ledger, runs);
  html += "</body></html>\n";
  write_file_atomic(out_file, html);
  out << "wrote " << out_file.string() << " (" << runs.size() << " runs)\n";
}

}  // namespace ct::lab
