#pragma once
// The "simpler code" tie-break of docs/harness.md: how many non-blank, non-comment source lines the run's
// code changes or adds against a declared baseline revision, counted by clocktrain from git.
//
// The tree is the one the binary was built from (kSourceDir of the version header); the lines are
// those of `git diff --unified=0 BASELINE` (the working tree against the revision: commits since it
// and uncommitted edits) that are added or changed, plus every line of files git does not track yet
// (and does not ignore), in the code of a submission: src/, recipes/, cmake/ and CMakeLists.txt. A
// line counts unless it is blank or a comment (C, C++ and CUDA: starting with //, /*, * or */;
// CMake, TOML, Python and shell: starting with #). Removed lines do not count.
// When the count cannot be made (no git, not a checkout, an unknown revision) it is unknown, with the
// reason: never a made-up number.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace ct {

// The revision a run is compared against unless `clocktrain run --baseline REV` names another.
inline constexpr const char* kDefaultBaselineRevision = "clocktrain-baseline";

struct SourceChanges {
  std::string baseline;             // the revision as given
  std::optional<int64_t> lines;     // the count; empty when unknown
  std::vector<std::string> files;   // files with counted lines, relative to the tree, sorted
  std::string why_unknown;          // why lines is empty
};

SourceChanges count_changed_source_lines(const std::filesystem::path& source_dir, const std::string& baseline);

// Whether `line` (one line of a file named `path`) counts: not blank and not a comment.
bool counts_as_source_line(const std::string& path, const std::string& line);

// {"baseline": ..., "lines": n or null, "files": [...], "why_unknown": "..." (only when unknown)}
Json to_json(const SourceChanges& changes);

}  // namespace ct
