// lab diff, noise, elasticity, verdict: the commands that read the ledger and compute.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <set>

#include "lab/arms.h"
#include "lab/elasticity.h"
#include "lab/formatting.h"
#include "lab/lab_commands.h"
#include "lab/noise.h"
#include "lab/run_selection.h"
#include "lab/statistics.h"
#include "lab/verdict.h"
#include "util/error.h"
#include "util/text_table.h"

namespace ct::lab {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

struct DiffSide {
  std::string label;
  RunRecord record;
  std::optional<StoredRun> stored;
};

DiffSide load_side(const std::string& spec, const fs::path& ledger_path, std::unique_ptr<Ledger>& ledger) {
  DiffSide side;
  if (all_digits(spec) && !fs::exists(spec)) {
    if (!ledger) ledger = std::make_unique<Ledger>(ledger_path, false);
    side.stored = ledger->run(std::stoll(spec));
    side.record = side.stored->record;
    side.label = str("run ", spec, " (experiment ", side.stored->experiment_id, ", arm ", side.stored->arm, ", ",
                     rung_name(side.stored->rung), ", seed ", side.record.seed, ")");
  } else {
    side.record = read_run_record(spec);
    side.label = str(side.record.run_dir.string(), " (seed ", side.record.seed, ")");
  }
  return side;
}

// The highest rung at which both arms of the rule have runs.
std::optional<Rung> highest_shared_rung(const std::vector<StoredRun>& runs, const DecisionRule& rule) {
  for (int r = kRungCount - 1; r >= 0; --r) {
    bool treatment = false, control = false;
    for (const auto& run : runs) {
      if (static_cast<int>(run.rung) != r) continue;
      treatment |= run.arm == rule.treatment_arm;
      control |= run.arm == rule.control_arm;
    }
    if (treatment && control) return static_cast<Rung>(r);
  }
  return std::nullopt;
}

std::optional<Rung> highest_rung(const std::vector<StoredRun>& runs) {
  std::optional<Rung> best;
  for (const auto& run : runs)
    if (!best || run.rung > *best) best = run.rung;
  return best;
}

void print_noise(const NoiseEstimate& n, const std::string& metric, const NoiseOptions& o, std::ostream& out) {
  out << "  mean " << metric << " " << format_fixed(n.mean, 5) << "; " << n.runs << " runs, " << n.seeds << " seeds\n"
      << "  seed spread    " << format_optional(n.seed_spread, 5) << (n.seed_spread ? str(" (df ", n.seed_df, ")") : "  (needs 2 seeds)") << "\n"
      << "  repeat std     " << format_optional(n.repeat_std, 5) << (n.repeat_std ? str(" (df ", n.repeat_df, ")") : "  (needs a repeated seed)") << "\n"
      << "  pair noise     " << format_optional(n.pair_noise, 5) << "  (std of the difference of two runs with one seed)\n"
      << "  single-run std " << format_optional(n.single_run_std, 5) << "  (one run, fresh seed)\n";
  if (!n.single_run_std && !n.pair_noise) return;
  out << "  minimum detectable effect at " << o.confidence * 100 << "% confidence, power " << o.power << ":\n";
  TextTable table({"runs/arm", "different seeds", "same seeds (paired)"});
  for (int runs : o.runs_per_arm) {
    MdeRow row = mde_for(n, runs, o.confidence, o.power);
    table.add_row({std::to_string(runs), format_optional(row.unpaired, 5), format_optional(row.paired, 5)});
  }
  out << table.render(2);
}

std::vector<SeededValue> seeded_values(const std::vector<const StoredRun*>& runs, const std::string& metric) {
  std::vector<SeededValue> values;
  for (const auto* r : runs)
    if (auto v = metric_value(r->record, metric)) values.push_back({r->record.seed, *v});
  return values;
}

std::string interval_text(double low, double high) {
  std::string text(1, '[');
  text += format_fixed(low, 5);
  text += ", ";
  text += format_fixed(high, 5);
  text += ']';
  return text;
}

std::string ids_of(const std::vector<const StoredRun*>& runs) {
  std::string out;
  for (const auto* r : runs) {
    if (!out.empty()) out += ',';
    out += std::to_string(r->id);
  }
  return out;
}

}  // namespace

void lab_diff(const fs::path& ledger_path, const std::string& left_spec, const std::string& right_spec,
              std::ostream& out) {
  std::unique_ptr<Ledger> ledger;
  DiffSide left = load_side(left_spec, ledger_path, ledger);
  DiffSide right = load_side(right_spec, ledger_path, ledger);
  std::optional<std::vector<std::string>> declared;
  if (left.stored && right.stored && left.stored->experiment_id == right.stored->experiment_id)
    declared = ledger->experiment(left.stored->experiment_id).declared;
  out << "left:  " << left.label << "\n       " << left.record.run_dir.string() << "\n"
      << "right: " << right.label << "\n       " << right.record.run_dir.string() << "\n\n";
  auto inputs = differences(run_fingerprint(left.record), run_fingerprint(right.record));
  if (inputs.empty()) {
    out << "no input differs (the seed is not an input: seeds replicate a configuration)\n";
  } else {
    out << "inputs that differ (" << inputs.size() << "):\n";
    TextTable table({"input", "left", "right", "status"});
    for (const auto& d : inputs) {
      std::string status = !declared ? "-" : is_declared(*declared, d.key) ? "declared change" : "UNDECLARED";
      table.add_row({d.key, d.left, d.right, status});
    }
    out << table.render();
  }
  auto outcomes = differences(run_outcomes(left.record), run_outcomes(right.record));
  if (!outcomes.empty()) {
    out << "\noutcomes and labels:\n";
    TextTable table({"field", "left", "right"});
    for (const auto& d : outcomes) table.add_row({d.key, d.left, d.right});
    out << table.render();
  }
}

void lab_noise(const NoiseOptions& o, std::ostream& out) {
  check(o.recipe.has_value() != o.experiment.has_value(), "lab noise: give either --recipe NAME or an experiment id");
  Ledger ledger(o.ledger, false);
  std::optional<Rung> rung = o.rung;
  std::vector<StoredRun> runs;
  std::vector<std::pair<std::string, std::vector<const StoredRun*>>> groups;
  if (o.experiment) {
    runs = ledger.runs(*o.experiment);
    if (!rung) rung = highest_rung(runs);
    check(rung.has_value(), "lab noise: experiment ", *o.experiment, " has no runs");
    std::erase_if(runs, [&](const StoredRun& r) { return r.rung != *rung; });
    std::set<std::string> arms;
    for (const auto& r : runs) arms.insert(r.arm);
    for (const auto& arm : arms) {
      std::vector<const StoredRun*> members;
      for (const auto& r : runs)
        if (r.arm == arm && usable_for_statistics(r, o.metric)) members.push_back(&r);
      groups.push_back({str("experiment ", *o.experiment, " arm ", arm, " at rung ", rung_name(*rung)), members});
    }
  } else {
    runs = runs_of_recipe(ledger, *o.recipe, rung);
    std::erase_if(runs, [&](const StoredRun& r) { return !usable_for_statistics(r, o.metric); });
    check(!runs.empty(), "lab noise: no usable runs of recipe '", *o.recipe, "' in ", o.ledger.string());
    auto configurations = group_by_configuration(runs);
    for (const auto& g : configurations) groups.push_back({configuration_label(g, configurations), g.runs});
  }
  out << "noise of " << o.metric << " (" << o.ledger.string() << ")\n";
  for (const auto& [label, members] : groups) {
    out << "\n" << label << "  [runs " << ids_of(members) << "]\n";
    auto values = seeded_values(members, o.metric);
    if (values.empty()) {
      out << "  no usable runs\n";
      continue;
    }
    print_noise(estimate_noise(values), o.metric, o, out);
  }
}

const char* elasticity_x_name(ElasticityX x) { return x == ElasticityX::steps ? "steps" : "tokens"; }
const char* levels_by_name(LevelsBy by) {
  return by == LevelsBy::automatic ? "auto" : by == LevelsBy::budget ? "budget" : "steps";
}
ElasticityX parse_elasticity_x(const std::string& text) {
  for (ElasticityX x : {ElasticityX::steps, ElasticityX::tokens})
    if (text == elasticity_x_name(x)) return x;
  fail("lab elasticity: --x must be steps or tokens, got '", text, "'");
}
LevelsBy parse_levels_by(const std::string& text) {
  for (LevelsBy by : {LevelsBy::automatic, LevelsBy::budget, LevelsBy::steps})
    if (text == levels_by_name(by)) return by;
  fail("lab elasticity: --by must be auto, budget or steps");
}

void lab_elasticity(const ElasticityOptions& o, std::ostream& out) {
  const std::string x_name = elasticity_x_name(o.x);
  Ledger ledger(o.ledger, false);
  std::optional<Rung> rung = o.rung;
  auto runs = runs_of_recipe(ledger, o.recipe, rung);
  std::erase_if(runs, [&](const StoredRun& r) {
    auto x = metric_value(r.record, x_name);
    return !usable_for_statistics(r, "val_bpb") || !x || *x <= 0;
  });
  std::set<double> budgets;
  for (const auto& r : runs)
    if (auto b = metric_value(r.record, "budget_seconds")) budgets.insert(*b);
  const LevelsBy levels_by =
      o.by != LevelsBy::automatic ? o.by : budgets.size() >= 2 ? LevelsBy::budget : LevelsBy::steps;
  const std::string by = levels_by_name(levels_by);
  std::vector<ElasticityPoint> points;
  for (const auto& r : runs) {
    auto level = metric_value(r.record, levels_by == LevelsBy::budget ? "budget_seconds" : "steps");
    if (!level) continue;
    points.push_back({*level, std::log(*metric_value(r.record, x_name)), *r.record.val_bpb, r.id});
  }
  check(!points.empty(), "lab elasticity: no usable runs of recipe '", o.recipe, "' (finite val_bpb, ", x_name,
        " > 0, eligible gate at smoke/full)");
  ElasticityFit fit = fit_elasticity(points);

  out << "elasticity of val_bpb in ln(" << x_name << ") for " << o.recipe << ", levels by " << by << " ("
      << points.size() << " runs)\n\n";
  TextTable levels({levels_by == LevelsBy::budget ? "budget s" : "steps", "runs", "mean " + x_name,
                    "mean ln(" + x_name + ")", "mean val_bpb"});
  for (const auto& l : fit.levels)
    levels.add_row({format_fixed(l.level, 0), std::to_string(l.runs), format_fixed(std::exp(l.mean_x), 1),
                    format_fixed(l.mean_x, 4), format_fixed(l.mean_y, 5)});
  out << levels.render() << "\n";
  TextTable ranges({"range", "from", "to", "points", "slope dbpb/dln(" + x_name + ")", "std error", "df"});
  for (size_t i = 0; i < fit.ranges.size(); ++i) {
    const auto& r = fit.ranges[i];
    ranges.add_row({std::to_string(i + 1), format_fixed(r.low.level, 0), format_fixed(r.high.level, 0),
                    std::to_string(r.fit.points), format_fixed(r.fit.slope, 5),
                    std::isfinite(r.fit.slope_standard_error) ? format_fixed(r.fit.slope_standard_error, 5) : "n/a",
                    std::to_string(r.fit.df())});
  }
  out << ranges.render();
  check(!(o.at && o.at_budget), "lab elasticity: give --at or --at-budget, not both");
  double operating_x = o.at ? std::log(*o.at) : fit.levels.back().mean_x;
  if (o.at_budget) {
    check(levels_by == LevelsBy::budget, "lab elasticity: --at-budget needs levels by budget (runs at 2 or more budgets)");
    auto level = std::find_if(fit.levels.begin(), fit.levels.end(),
                              [&](const ElasticityLevel& l) { return l.level == *o.at_budget; });
    check(level != fit.levels.end(), "lab elasticity: no runs at budget ", *o.at_budget, " s");
    operating_x = level->mean_x;
  }
  check(std::isfinite(operating_x), "lab elasticity: --at must be a positive ", x_name, " count");
  out << "\nexpected change of val_bpb from a speed-up at " << format_fixed(std::exp(operating_x), 1) << " " << x_name
      << " (delta = slope * ln(1 + p/100); " << o.confidence * 100 << "% interval):\n";
  TextTable effects({"speed-up %", "range", "delta val_bpb", "std error", "interval", "note"});
  for (double p : o.speedups_percent) {
    SpeedupEffect e = speedup_effect(fit, p, operating_x, o.confidence);
    effects.add_row({format_fixed(p, 1), std::to_string(e.range_index + 1), format_fixed(e.delta, 5),
                     format_optional(e.standard_error, 5),
                     e.low ? interval_text(*e.low, *e.high) : std::string("n/a (1 run per level)"),
                     e.beyond_range ? "extrapolated past the range" : ""});
  }
  out << effects.render();
  // Inputs other than the budget that vary among these runs make the fit mix configurations.
  auto groups = group_by_configuration(runs);
  std::set<std::string> varying;
  for (size_t i = 1; i < groups.size(); ++i)
    for (const auto& d : differences(groups[0].fingerprint, groups[i].fingerprint))
      if (d.key.find("budget") == std::string::npos && d.key.find("steps") == std::string::npos) varying.insert(d.key);
  if (!varying.empty()) {
    out << "\nwarning: besides the budget, these inputs vary among the runs:";
    for (const auto& k : varying) out << " " << k;
    out << "\n";
  }
}

std::string lab_verdict(const fs::path& ledger_path, int64_t experiment, std::optional<Rung> chosen_rung,
                        std::ostream& out) {
  Ledger ledger(ledger_path, false);
  Experiment e = ledger.experiment(experiment);
  auto runs = ledger.runs(experiment);
  std::optional<Rung> rung = chosen_rung ? chosen_rung : highest_shared_rung(runs, e.rule);
  check(rung.has_value(), "lab verdict: experiment ", experiment, " has no rung with runs in both arms (",
        e.rule.control_arm, ", ", e.rule.treatment_arm, ")");
  std::vector<const StoredRun*> used;
  std::vector<std::string> left_out;
  ArmSample treatment{e.rule.treatment_arm, {}, {}, {}}, control{e.rule.control_arm, {}, {}, {}};
  for (const auto& r : runs) {
    if (r.rung != *rung || (r.arm != e.rule.treatment_arm && r.arm != e.rule.control_arm)) continue;
    std::string why;
    if (!usable_for_statistics(r, e.rule.metric, &why)) {
      left_out.push_back(str("  left out run ", r.id, " (arm ", r.arm, "): ", why, "\n"));
      continue;
    }
    used.push_back(&r);
    ArmSample& sample = r.arm == e.rule.treatment_arm ? treatment : control;
    sample.values.push_back(*metric_value(r.record, e.rule.metric));
    sample.seeds.push_back(r.record.seed);
    sample.run_ids.push_back(r.id);
  }
  ArmHygiene hygiene = check_arm_hygiene(used, e.declared);
  if (!hygiene.clean()) {
    std::string problems;
    for (const auto& p : hygiene.problems) problems += "\n  " + p.key + ": " + p.description;
    fail("lab verdict refused for experiment ", experiment, ": the arms differ in more than the declared change:",
         problems, "\n(declare a difference with `clocktrain lab declare ", experiment,
         " KEY` only if it IS the change; otherwise rerun the arm without it)");
  }
  VerdictNumbers v = decide(e.rule, e.confidence, e.power, treatment, control);
  out << "experiment " << experiment << ": " << e.change << "\n  rule: " << e.rule.canonical(e.confidence)
      << "\n  rung: " << rung_name(*rung) << "\n";
  for (const auto& line : left_out) out << line;

  TextTable arms({"arm", "role", "runs", "mean " + v.metric, "std", "run ids"});
  auto ids = [](const ArmSample& s) {
    std::string text;
    for (auto id : s.run_ids) {
      if (!text.empty()) text += ',';
      text += std::to_string(id);
    }
    return text;
  };
  arms.add_row({control.arm, "control", std::to_string(v.control_runs), format_fixed(v.control_mean, 5),
                format_fixed(v.control_std, 5), ids(control)});
  arms.add_row({treatment.arm, "treatment", std::to_string(v.treatment_runs), format_fixed(v.treatment_mean, 5),
                format_fixed(v.treatment_std, 5), ids(treatment)});
  out << arms.render(2);
  out << "  declared changes that differ:";
  if (hygiene.declared_changes.empty()) out << " none";
  for (const auto& k : hygiene.declared_changes) out << " " << k;
  out << "\n  design: " << v.design << (v.design == "paired" ? str(" (", v.pairs, " seeds in both arms)") : "")
      << "\n  d = mean(" << treatment.arm << ") - mean(" << control.arm << ") = " << format_fixed(v.effect, 5)
      << "  (se " << format_fixed(v.standard_error, 5) << ", df " << format_fixed(v.df, 1) << ")"
      << "\n  " << v.confidence * 100 << "% interval [" << format_fixed(v.interval_low, 5) << ", "
      << format_fixed(v.interval_high, 5) << "]"
      << "\n  minimum detectable effect " << format_fixed(v.mde, 5) << " (power " << v.power << ")"
      << "\n  predicted " << format_fixed(e.predicted_effect, 5) << " in [" << format_fixed(e.predicted_low, 5) << ", "
      << format_fixed(e.predicted_high, 5) << "]: observed d is "
      << (v.effect >= e.predicted_low && v.effect <= e.predicted_high ? "inside" : "OUTSIDE")
      << " the predicted interval\n";
  Json numbers = v.to_json();
  numbers["treatment"]["arm"] = treatment.arm;
  numbers["treatment"]["run_ids"] = treatment.run_ids;
  numbers["control"]["arm"] = control.arm;
  numbers["control"]["run_ids"] = control.run_ids;
  numbers["declared_changes"] = hygiene.declared_changes;
  numbers["rule"] = e.rule_text;
  numbers["prediction_hit"] = v.effect >= e.predicted_low && v.effect <= e.predicted_high;
  int64_t id = ledger.add_verdict(experiment, v.verdict, *rung, numbers);
  out << "verdict " << id << ": " << v.verdict << " — " << v.reason << "\n";
  return v.verdict;
}

}  // namespace ct::lab
