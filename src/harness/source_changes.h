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
//
// The baseline is pinned: the file BASELINE at the top of the tree holds one full commit hash (the
// release competitors start from), the default revision ("pinned"). Another may be named, but only
// that commit or one of its ancestors: a later commit (HEAD itself, say) may hold the submission's own
// changes, which would then not count. The resolved 40-hex commit is recorded, and the board breaks
// ties on changed lines only between results counted against the same commit (board.h).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace ct {

// The revision a run is compared against unless `clocktrain run --baseline REV` names another: the
// commit in the file kBaselineFileName.
inline constexpr const char* kDefaultBaselineRevision = "pinned";
inline constexpr const char* kBaselineFileName = "BASELINE";

struct ResolvedBaseline {
  std::string commit;       // 40 hex digits; empty when unknown
  std::string why_unknown;  // why commit is empty
};

// `revision` ("pinned": the commit in source_dir/BASELINE) as a full commit hash in source_dir's
// checkout; unknown, with the reason, outside a checkout or where the commit is not in it. Throws for
// a baseline the tie-break refuses: neither the pinned commit nor an ancestor of it.
ResolvedBaseline resolve_baseline(const std::filesystem::path& source_dir, const std::string& revision);

struct SourceChanges {
  std::string baseline;             // the revision as given
  std::string baseline_commit;      // what it resolved to (40 hex digits); empty when unknown
  std::optional<int64_t> lines;     // the count; empty when unknown
  std::vector<std::string> files;   // files with counted lines, relative to the tree, sorted
  std::string why_unknown;          // why lines is empty
};

SourceChanges count_changed_source_lines(const std::filesystem::path& source_dir, const std::string& baseline);
// The same against a baseline resolved already (clocktrain run resolves it before training, and counts
// against that commit after).
SourceChanges count_changed_source_lines(const std::filesystem::path& source_dir, const std::string& baseline,
                                         const ResolvedBaseline& resolved);

// Whether `line` (one line of a file named `path`) counts: not blank and not a comment.
bool counts_as_source_line(const std::string& path, const std::string& line);

// {"baseline": ..., "baseline_commit": "<40 hex>" or null, "lines": n or null, "files": [...],
//  "why_unknown": "..." (only when unknown)}
Json to_json(const SourceChanges& changes);

}  // namespace ct
