#include "lab/ladder.h"

#include <array>

#include "lab/run_record.h"
#include "util/error.h"

namespace ct::lab {

namespace {
constexpr std::array<std::string_view, kRungCount> kRungNames = {"cpu-check", "probe", "smoke", "full"};

// The gate's valid_score check when result.json lists it; true when absent (val_bpb decides then).
bool valid_score_check_passed(const RunRecord& run) {
  const Json& checks = run.result.at("gate").value("checks", Json::array());
  if (!checks.is_array()) return true;
  for (const Json& c : checks)
    if (c.is_object() && c.value("name", "") == "valid_score") return c.value("passed", false);
  return true;
}
}  // namespace

std::string_view rung_name(Rung rung) { return kRungNames[static_cast<size_t>(rung)]; }

Rung parse_rung(std::string_view name) {
  for (size_t i = 0; i < kRungNames.size(); ++i)
    if (kRungNames[i] == name) return static_cast<Rung>(i);
  fail("unknown rung '", name, "': expected one of cpu-check, probe, smoke, full");
}

std::optional<Rung> previous_rung(Rung rung) {
  if (rung == Rung::cpu_check) return std::nullopt;
  return static_cast<Rung>(static_cast<int>(rung) - 1);
}

bool run_passes_rung(const RunRecord& run, Rung rung, std::optional<int> exit_code) {
  if (exit_code && *exit_code != 0) return false;
  switch (rung) {
    case Rung::cpu_check:
    case Rung::probe: return run.val_bpb.has_value() && valid_score_check_passed(run);
    case Rung::smoke:
    case Rung::full: return run.gate_eligible;
  }
  return false;
}

}  // namespace ct::lab
