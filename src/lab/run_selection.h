#pragma once
// Choosing the runs that statistics may use, shared by noise, elasticity, verdict and the report.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lab/ledger.h"

namespace ct::lab {

// A run's value may enter statistics when it was not excluded (lab exclude), its metric is present
// (finite) and, at the smoke and full rungs, its gate is eligible: a run that broke the rules
// measures nothing. `why_not` says which.
bool usable_for_statistics(const StoredRun& run, const std::string& metric, std::string* why_not = nullptr);

// Every recorded run of a recipe (result name, or the stem of recipe.path), each run folder once
// (the first record wins when a folder was added to several experiments), optionally at one rung.
std::vector<StoredRun> runs_of_recipe(Ledger& ledger, const std::string& recipe, std::optional<Rung> rung);

// Runs with identical fingerprints (every input but the seed): one configuration each.
struct ConfigurationGroup {
  std::map<std::string, std::string> fingerprint;
  std::vector<const StoredRun*> runs;
};
std::vector<ConfigurationGroup> group_by_configuration(const std::vector<StoredRun>& runs);

// A short label for a group: the recipe name, its budget, and the inputs that tell it apart from
// the other groups (at most a few).
std::string configuration_label(const ConfigurationGroup& group, const std::vector<ConfigurationGroup>& all);

}  // namespace ct::lab
