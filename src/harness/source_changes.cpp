#include "harness/source_changes.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "util/child_process.h"
#include "util/error.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& counted_paths() {
  static const std::vector<std::string> paths = {"src", "recipes", "cmake", "CMakeLists.txt"};
  return paths;
}

// Runs a command; its stdout, and whether it exited 0 (stderr goes to /dev/null).
bool capture(const std::vector<std::string>& argv, std::string& out) {
  FILE* pipe = ::popen((shell_join(argv) + " 2>/dev/null").c_str(), "r");
  if (!pipe) return false;
  char buffer[1 << 16];
  size_t n;
  out.clear();
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  return ::pclose(pipe) == 0;
}

bool hash_comment_file(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  const std::string name = fs::path(path).filename().string();
  return ext == ".cmake" || ext == ".toml" || ext == ".py" || ext == ".sh" || name == "CMakeLists.txt";
}

}  // namespace

bool counts_as_source_line(const std::string& path, const std::string& line) {
  const size_t first = line.find_first_not_of(" \t\r\f\v");
  if (first == std::string::npos) return false;
  const std::string text = line.substr(first);
  if (hash_comment_file(path)) return text[0] != '#';
  return !(text.rfind("//", 0) == 0 || text.rfind("/*", 0) == 0 || text.rfind("*", 0) == 0);
}

ResolvedBaseline resolve_baseline(const fs::path& source_dir, const std::string& revision) {
  ResolvedBaseline b;
  std::string out;
  const std::string dir = source_dir.string();
  if (!capture({"git", "-C", dir, "rev-parse", "--is-inside-work-tree"}, out) || out.rfind("true", 0) != 0) {
    b.why_unknown = str(dir, " is not a git checkout git can read (or git is not installed)");
    return b;
  }
  const auto commit_of = [&](const std::string& rev, std::string& commit) {
    if (!capture({"git", "-C", dir, "rev-parse", "--verify", "--quiet", rev + "^{commit}"}, out)) return false;
    commit = out.substr(0, out.find('\n'));
    return true;
  };
  // The pinned commit: one line of 40 hex digits.
  const fs::path pin_file = source_dir / kBaselineFileName;
  std::string pinned;
  if (std::ifstream in(pin_file); in) std::getline(in, pinned);
  const bool pin_valid = pinned.size() == 40 && pinned.find_first_not_of("0123456789abcdef") == std::string::npos;
  std::string pinned_commit;
  if (revision == kDefaultBaselineRevision) {
    if (!pin_valid) {
      b.why_unknown = str(pin_file.string(), " does not hold the pinned baseline (one line of a 40-hex commit)");
      return b;
    }
    if (!commit_of(pinned, b.commit)) {
      b.why_unknown = str("the pinned baseline ", pinned, " (", pin_file.string(), ") is not in the checkout at ", dir,
                          " (a shallow clone? fetch it, or name another with clocktrain run --baseline REV)");
      return b;
    }
    return b;
  }
  if (!commit_of(revision, b.commit)) {
    b.why_unknown = str("the baseline revision '", revision, "' is not in the checkout at ", dir,
                        " (name one with clocktrain run --baseline REV)");
    return b;
  }
  // Another revision: the pinned commit or one of its ancestors, where the pin can be checked.
  if (pin_valid && commit_of(pinned, pinned_commit) && b.commit != pinned_commit) {
    const bool ancestor = capture({"git", "-C", dir, "merge-base", "--is-ancestor", b.commit, pinned_commit}, out);
    check(ancestor, "--baseline ", revision, " (", b.commit, ") is refused: the tie-break counts changes against the "
          "pinned baseline ", pinned_commit, " (", pin_file.string(), ") or one of its ancestors, and a later commit "
          "may hold this tree's own changes");
  }
  return b;
}

SourceChanges count_changed_source_lines(const fs::path& source_dir, const std::string& baseline) {
  ResolvedBaseline resolved;
  try {
    resolved = resolve_baseline(source_dir, baseline);
  } catch (const Error& e) {
    resolved.why_unknown = e.what();  // refused (clocktrain run checks it before training)
  }
  return count_changed_source_lines(source_dir, baseline, resolved);
}

SourceChanges count_changed_source_lines(const fs::path& source_dir, const std::string& baseline,
                                         const ResolvedBaseline& resolved) {
  SourceChanges c;
  c.baseline = baseline;
  std::string out;
  const std::string dir = source_dir.string();
  if (resolved.commit.empty()) {
    c.why_unknown = resolved.why_unknown;
    return c;
  }
  c.baseline_commit = resolved.commit;
  std::map<std::string, int64_t> per_file;
  // Added or changed lines of tracked files: in a file's header (from "diff --git" to its first "@@")
  // "+++ b/<path>" names the file; after it "+<text>" is an added line.
  std::vector<std::string> diff = {"git", "-C", dir, "diff", "--no-color", "--no-ext-diff", "--unified=0",
                                   "--no-renames", c.baseline_commit, "--"};
  diff.insert(diff.end(), counted_paths().begin(), counted_paths().end());
  if (!capture(diff, out)) {
    c.why_unknown = str("git diff against '", baseline, "' (", c.baseline_commit, ") failed in ", dir);
    return c;
  }
  std::istringstream lines(out);
  std::string line, file;
  bool in_header = false;
  while (std::getline(lines, line)) {
    if (line.rfind("diff --git ", 0) == 0) {
      in_header = true;
      file.clear();
    } else if (in_header && line.rfind("+++ ", 0) == 0) {
      file = line.rfind("+++ b/", 0) == 0 ? line.substr(6) : "";  // "+++ /dev/null": a deleted file
    } else if (line.rfind("@@", 0) == 0) {
      in_header = false;
    } else if (!in_header && !file.empty() && !line.empty() && line[0] == '+' &&
               counts_as_source_line(file, line.substr(1))) {
      ++per_file[file];
    }
  }
  // Files git does not track yet (and does not ignore): every line is added.
  std::vector<std::string> untracked = {"git", "-C", dir, "ls-files", "--others", "--exclude-standard", "--"};
  untracked.insert(untracked.end(), counted_paths().begin(), counted_paths().end());
  if (!capture(untracked, out)) {
    c.why_unknown = str("git ls-files failed in ", dir);
    return c;
  }
  std::istringstream names(out);
  std::string name;
  while (std::getline(names, name)) {
    if (name.empty()) continue;
    std::ifstream in(source_dir / name);
    for (std::string text; std::getline(in, text);)
      if (counts_as_source_line(name, text)) ++per_file[name];
  }
  int64_t total = 0;
  for (const auto& [f, n] : per_file) {
    if (n == 0) continue;
    total += n;
    c.files.push_back(f);
  }
  c.lines = total;
  return c;
}

Json to_json(const SourceChanges& c) {
  Json j;
  j["baseline"] = c.baseline;
  j["baseline_commit"] = c.baseline_commit.empty() ? Json(nullptr) : Json(c.baseline_commit);
  j["lines"] = c.lines ? Json(*c.lines) : Json(nullptr);
  j["files"] = c.files;
  if (!c.lines) j["why_unknown"] = c.why_unknown;
  return j;
}

}  // namespace ct
