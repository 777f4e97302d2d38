#pragma once
// report.html: one self-contained page per run (inline CSS and SVG; no script, no network) built
// from metrics.jsonl, result.json and the recipe: the loss and held-out loss against the training
// clock, throughput and MFU, the learning-rate factor and gradient norm, the gate's verdicts with
// their evidence, val_bpb and the CORE table, the recipe, the device, the binary and the
// environment. Written as XHTML-compatible HTML5, so a strict XML parser accepts it; every string
// from the files is escaped (harness/html.h).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/metrics.h"
#include "harness/result.h"

namespace ct {

inline constexpr const char* kReportFileName = "report.html";
inline constexpr const char* kRecipeCopyFileName = "recipe.toml";  // the run folder's copy, if any

struct ReportInputs {
  std::string title;                // shown when there is no result (e.g. the run folder's name)
  std::optional<RunResult> result;  // absent while a run is in progress or after a crash
  MetricsLog metrics;
  bool metrics_read = true;         // false: the folder has no metrics.jsonl (training never started)
  std::string recipe_text;          // the recipe file as saved in the run folder (may be empty)
  std::vector<std::string> notes;   // problems met while gathering the inputs, shown at the top
};

std::string render_report_html(const ReportInputs& inputs);

// The training steps the charts draw against the training clock: the timed ones. The startup steps
// run before the clock starts and have no place on it (drawn at the clock they stood at, they piled up
// at 0 with one-time compilation in their times); the page says how many it leaves out.
std::vector<TrainStepRecord> steps_on_the_clock(const MetricsLog& log);

// Gathers RUN_DIR/{metrics.jsonl,result.json,recipe.toml} (at least one of the first two; a missing
// one is noted on the page) and writes the page atomically to `out` (default
// RUN_DIR/report.html). Returns the path written.
std::filesystem::path write_run_report(const std::filesystem::path& run_dir,
                                       const std::filesystem::path& out = {});

}  // namespace ct
