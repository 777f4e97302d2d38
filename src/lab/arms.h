#pragma once
// Arm hygiene (docs/lab.md, step 2): arms are compared whole. Every input of every run (its fingerprint,
// run_record.h) is compared; a difference is allowed only when the experiment declared it as its
// change, and even a declared key must be constant within each arm. Everything else blocks a verdict
// (a speed-up that came from a debug variable set on one arm only is caught here).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ct::lab {

struct StoredRun;

// A declared key covers the key itself and everything below it: "recipe.model" covers
// "recipe.model.n_layer"; "binary" covers binary.version and binary.build_flags; a trailing ".*"
// is accepted as the same thing ("recipe.model.*").
bool declared_key_matches(const std::string& declared, const std::string& key);
bool is_declared(const std::vector<std::string>& declared, const std::string& key);

inline constexpr const char* kAbsent = "(absent)";

struct FieldDifference {
  std::string key;
  std::string left, right;  // canonical JSON text, or kAbsent
};

// Every key whose value differs between the two maps (a key missing on one side differs).
std::vector<FieldDifference> differences(const std::map<std::string, std::string>& left,
                                         const std::map<std::string, std::string>& right);

struct HygieneProblem {
  std::string key;
  std::string description;  // which values, in which arm and run
};

struct ArmHygiene {
  std::vector<HygieneProblem> problems;        // undeclared differences; each blocks a verdict
  std::vector<std::string> declared_changes;   // declared keys that do differ between the arms
  bool clean() const { return problems.empty(); }
};

ArmHygiene check_arm_hygiene(const std::vector<const StoredRun*>& runs, const std::vector<std::string>& declared);

}  // namespace ct::lab
