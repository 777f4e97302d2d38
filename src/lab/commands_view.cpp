// lab list, show: what the ledger holds.
#include "lab/arms.h"
#include "lab/formatting.h"
#include "lab/lab_commands.h"
#include "lab/run_selection.h"
#include "util/error.h"
#include "util/text_table.h"

namespace ct::lab {

void lab_list(const fs::path& ledger_path, std::ostream& out) {
  Ledger ledger(ledger_path, false);
  auto verdicts = ledger.verdicts();
  TextTable table({"id", "created (UTC)", "runs", "latest verdict", "change"});
  for (const auto& e : ledger.experiments()) {
    std::string latest = "-";
    for (const auto& v : verdicts)
      if (v.experiment_id == e.id) latest = v.verdict + " (" + std::string(rung_name(v.rung)) + ")";
    table.add_row({std::to_string(e.id), format_unix_time(e.created_unix), std::to_string(ledger.runs(e.id).size()),
                   latest, e.change});
  }
  if (table.empty()) out << "no experiments in " << ledger_path.string() << "\n";
  else out << table.render();
}

void lab_show(const fs::path& ledger_path, int64_t id, std::ostream& out) {
  Ledger ledger(ledger_path, false);
  Experiment e = ledger.experiment(id);
  out << "experiment " << id << " (opened " << format_unix_time(e.created_unix) << " UTC)\n"
      << "  change:     " << e.change << "\n"
      << "  hypothesis: " << e.hypothesis << "\n"
      << "  predicted:  " << e.predicted_effect << " in [" << e.predicted_low << ", " << e.predicted_high << "]\n"
      << "  rule:       " << e.rule_text << "\n"
      << "              " << e.rule.canonical(e.confidence) << ", power " << e.power << "\n"
      << "  declared:  ";
  if (e.declared.empty()) out << " none";
  for (const auto& k : e.declared) out << " " << k;
  out << "\n\nladder:\n";
  for (int r = 0; r < kRungCount; ++r) {
    Rung rung = static_cast<Rung>(r);
    out << "  " << rung_name(rung) << ": " << (ledger.rung_passed(id, rung) ? "passed" : "not passed") << "\n";
  }
  auto checks = ledger.checks(id);
  if (!checks.empty()) {
    out << "\nchecks:\n";
    TextTable table({"id", "rung", "arm", "exit", "passed", "command"});
    for (const auto& c : checks)
      table.add_row({std::to_string(c.id), std::string(rung_name(c.rung)), c.arm.value_or("-"),
                     std::to_string(c.exit_code), c.passed ? "yes" : "no", c.command});
    out << table.render();
  }
  auto runs = ledger.runs(id);
  if (!runs.empty()) {
    out << "\nruns:\n";
    TextTable table(
        {"id", "arm", "rung", "seed", "val_bpb", "steps", "gate", "passed", "recorded (UTC)", "excluded", "folder"});
    for (const auto& r : runs) {
      auto steps = metric_value(r.record, "steps");
      table.add_row({std::to_string(r.id), r.arm, std::string(rung_name(r.rung)), std::to_string(r.record.seed),
                     format_optional(r.record.val_bpb, 5), steps ? format_fixed(*steps, 0) : "-",
                     r.record.gate_eligible ? "eligible" : "not eligible",
                     run_passes_rung(r.record, r.rung, r.provenance.exit_code) ? "yes" : "no",
                     format_unix_time(r.recorded_unix), r.excluded_reason.value_or("-"), r.record.run_dir.string()});
    }
    out << table.render();
    for (int r = 0; r < kRungCount; ++r) {
      std::vector<const StoredRun*> at_rung;
      for (const auto& run : runs)
        if (static_cast<int>(run.rung) == r && !run.excluded_reason) at_rung.push_back(&run);
      if (at_rung.size() < 2) continue;
      ArmHygiene hygiene = check_arm_hygiene(at_rung, e.declared);
      out << "\narm hygiene at " << rung_name(static_cast<Rung>(r)) << ": "
          << (hygiene.clean() ? "clean" : "BLOCKED") << "\n";
      for (const auto& p : hygiene.problems) out << "  " << p.key << ": " << p.description << "\n";
      for (const auto& k : hygiene.declared_changes) out << "  declared change differs: " << k << "\n";
    }
  }
  auto verdicts = ledger.verdicts(id);
  if (!verdicts.empty()) {
    out << "\nverdicts:\n";
    TextTable table({"id", "rung", "verdict", "d", "interval", "mde", "created (UTC)"});
    for (const auto& v : verdicts) {
      const Json& n = v.numbers;
      auto number = [&](const char* key) {
        return n.contains(key) && n[key].is_number() ? format_fixed(n[key].get<double>(), 5) : std::string("-");
      };
      std::string interval = n.contains("interval") && n["interval"].is_array() && n["interval"].size() == 2
                                 ? "[" + format_fixed(n["interval"][0].get<double>(), 5) + ", " +
                                       format_fixed(n["interval"][1].get<double>(), 5) + "]"
                                 : "-";
      table.add_row({std::to_string(v.id), std::string(rung_name(v.rung)), v.verdict, number("effect"), interval,
                     number("mde"), format_unix_time(v.created_unix)});
    }
    out << table.render();
  }
}

}  // namespace ct::lab
