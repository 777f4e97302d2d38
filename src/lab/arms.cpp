#include "lab/arms.h"

#include <set>

#include "lab/ledger.h"

namespace ct::lab {

bool declared_key_matches(const std::string& declared, const std::string& key) {
  std::string base = declared;
  if (base.ends_with(".*")) base.resize(base.size() - 2);
  if (base == "*") return true;
  return key == base || (key.size() > base.size() && key.starts_with(base) && key[base.size()] == '.');
}

bool is_declared(const std::vector<std::string>& declared, const std::string& key) {
  for (const auto& d : declared)
    if (declared_key_matches(d, key)) return true;
  return false;
}

std::vector<FieldDifference> differences(const std::map<std::string, std::string>& left,
                                         const std::map<std::string, std::string>& right) {
  std::set<std::string> keys;
  for (const auto& [k, v] : left) keys.insert(k);
  for (const auto& [k, v] : right) keys.insert(k);
  std::vector<FieldDifference> out;
  for (const auto& key : keys) {
    auto l = left.find(key), r = right.find(key);
    std::string lv = l == left.end() ? kAbsent : l->second;
    std::string rv = r == right.end() ? kAbsent : r->second;
    if (lv != rv) out.push_back({key, lv, rv});
  }
  return out;
}

namespace {

// "value" in arm (runs 1, 2); ... for one key.
std::string describe_values(const std::string& key, const std::vector<const StoredRun*>& runs,
                            const std::vector<std::map<std::string, std::string>>& prints) {
  // value -> arm -> run ids, in first-seen order of values
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> where;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto it = prints[i].find(key);
    std::string value = it == prints[i].end() ? kAbsent : it->second;
    if (!where.count(value)) order.push_back(value);
    where[value][runs[i]->arm].push_back(runs[i]->id);
  }
  std::string out;
  for (const auto& value : order) {
    if (!out.empty()) out += "; ";
    out += value + " in";
    bool first_arm = true;
    for (const auto& [arm, ids] : where[value]) {
      out += first_arm ? " arm " : ", arm ";
      first_arm = false;
      out += arm + " (run";
      out += ids.size() > 1 ? "s " : " ";
      for (size_t j = 0; j < ids.size(); ++j) out += (j ? ", " : "") + std::to_string(ids[j]);
      out += ")";
    }
  }
  return out;
}

}  // namespace

ArmHygiene check_arm_hygiene(const std::vector<const StoredRun*>& runs, const std::vector<std::string>& declared) {
  std::vector<std::map<std::string, std::string>> prints;
  std::set<std::string> keys;
  for (const auto* run : runs) {
    prints.push_back(run_fingerprint(run->record));
    for (const auto& [k, v] : prints.back()) keys.insert(k);
  }
  ArmHygiene hygiene;
  for (const auto& key : keys) {
    std::map<std::string, std::set<std::string>> values_by_arm;
    std::set<std::string> all_values;
    for (size_t i = 0; i < runs.size(); ++i) {
      auto it = prints[i].find(key);
      std::string value = it == prints[i].end() ? kAbsent : it->second;
      values_by_arm[runs[i]->arm].insert(value);
      all_values.insert(value);
    }
    if (all_values.size() <= 1) continue;
    if (!is_declared(declared, key)) {
      hygiene.problems.push_back({key, "undeclared difference: " + describe_values(key, runs, prints)});
      continue;
    }
    bool constant_within_arms = true;
    for (const auto& [arm, values] : values_by_arm) constant_within_arms &= values.size() == 1;
    if (!constant_within_arms)
      hygiene.problems.push_back(
          {key, "declared change varies within an arm: " + describe_values(key, runs, prints)});
    else
      hygiene.declared_changes.push_back(key);
  }
  return hygiene;
}

}  // namespace ct::lab
