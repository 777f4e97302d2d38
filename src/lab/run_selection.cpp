#include "lab/run_selection.h"

#include <set>

#include "lab/arms.h"

namespace ct::lab {

bool usable_for_statistics(const StoredRun& run, const std::string& metric, std::string* why_not) {
  if (run.excluded_reason) {
    if (why_not) *why_not = "excluded (" + *run.excluded_reason + ")";
    return false;
  }
  if (!metric_value(run.record, metric)) {
    if (why_not) *why_not = "no finite " + metric;
    return false;
  }
  if ((run.rung == Rung::smoke || run.rung == Rung::full) && !run.record.gate_eligible) {
    if (why_not) *why_not = "gate not eligible";
    return false;
  }
  return true;
}

std::vector<StoredRun> runs_of_recipe(Ledger& ledger, const std::string& recipe, std::optional<Rung> rung) {
  std::vector<StoredRun> out;
  std::set<std::string> seen;
  for (auto& run : ledger.runs()) {
    std::string path = run.record.result.at("recipe").value("path", "");
    bool matches = run.record.name == recipe || (!path.empty() && std::filesystem::path(path).stem() == recipe);
    if (!matches || (rung && run.rung != *rung)) continue;
    if (!seen.insert(run.record.run_dir.string()).second) continue;
    out.push_back(std::move(run));
  }
  return out;
}

std::vector<ConfigurationGroup> group_by_configuration(const std::vector<StoredRun>& runs) {
  std::vector<ConfigurationGroup> groups;
  for (const auto& run : runs) {
    auto fingerprint = run_fingerprint(run.record);
    bool placed = false;
    for (auto& g : groups)
      if (g.fingerprint == fingerprint) {
        g.runs.push_back(&run);
        placed = true;
        break;
      }
    if (!placed) groups.push_back({fingerprint, {&run}});
  }
  return groups;
}

std::string configuration_label(const ConfigurationGroup& group, const std::vector<ConfigurationGroup>& all) {
  std::string label = group.runs.front()->record.name;
  auto budget = group.fingerprint.find("budget_seconds");
  if (budget != group.fingerprint.end()) label += " " + budget->second + " s";
  // The keys in which this group differs from some other group (besides the budget).
  std::set<std::string> distinguishing;
  for (const auto& other : all) {
    if (&other == &group || other.runs.front()->record.name != group.runs.front()->record.name) continue;
    for (const auto& d : differences(group.fingerprint, other.fingerprint))
      if (d.key != "budget_seconds") distinguishing.insert(d.key);
  }
  int shown = 0;
  for (const auto& key : distinguishing) {
    if (shown++ == 3) {
      label += " ...";
      break;
    }
    auto it = group.fingerprint.find(key);
    label += " " + key + "=" + (it == group.fingerprint.end() ? std::string(kAbsent) : it->second);
  }
  return label;
}

}  // namespace ct::lab
