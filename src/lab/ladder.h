#pragma once
// The validation ladder (docs/lab.md, step 5). A change climbs the rungs in order and may not skip one:
//   cpu-check  gradient and numerics tests of what changed   recorded by `lab check` (a command)
//   probe      a few steps on the target device              `lab run/add --rung probe`, or `lab check`
//   smoke      a short timed run                             `lab run/add --rung smoke`
//   full       the exact package at the full budget          `lab run/add --rung full`
// A rung may be recorded for an experiment only once the rung below it has PASSED in that experiment:
//   cpu-check, probe recorded by `lab check`: the command exited with status 0;
//   probe recorded as a run: the run finished (exit status 0 when launched by the lab) with a finite
//     val_bpb and, when the gate lists it, a passed valid_score check (no NaN/Inf during training);
//   smoke, full: the run's gate is eligible (every check of docs/harness.md passed).
#include <optional>
#include <string>
#include <string_view>

namespace ct::lab {

struct RunRecord;

enum class Rung { cpu_check = 0, probe = 1, smoke = 2, full = 3 };

inline constexpr int kRungCount = 4;

std::string_view rung_name(Rung rung);
// "cpu-check", "probe", "smoke", "full"; an error lists them otherwise.
Rung parse_rung(std::string_view name);
std::optional<Rung> previous_rung(Rung rung);

// Whether a run recorded at `rung` counts as a pass of that rung (definition above).
bool run_passes_rung(const RunRecord& run, Rung rung, std::optional<int> exit_code);

}  // namespace ct::lab
