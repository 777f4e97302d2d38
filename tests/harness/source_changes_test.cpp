// The tie-break's count of changed source lines, on a git repository made here: what counts (added
// and changed code lines of src/, recipes/, cmake/, CMakeLists.txt, untracked files there), what does
// not (blank and comment lines, removed lines, other folders), and "unknown" with the reason.
#include "harness/source_changes.h"

#include <gtest/gtest.h>

#include "test_support.h"
#include "util/files.h"

namespace ct {
namespace {

// A file with its folders.
void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  write_file_atomic(path, text);
}

void git(const fs::path& repo, const std::string& args) {
  auto r = test::run_command("git -C " + repo.string() + " -c user.name=t -c user.email=t@example.org " + args);
  ASSERT_EQ(r.exit_code, 0) << args << ": " << r.output;
}

TEST(SourceChanges, CountsAddedAndChangedCodeLinesAgainstTheBaseline) {
  test::TempDir dir;
  const fs::path repo = dir / "repo";
  put(repo / "src" / "a.cpp", "int a = 1;\nint b = 2;\nint c = 3;\n");
  put(repo / "recipes" / "r.toml", "name = \"r\"\n");
  put(repo / "docs" / "x.md", "text\n");
  git(repo, "init -q");
  git(repo, "add -A");
  git(repo, "commit -q -m base");
  git(repo, "tag base");
  // a.cpp: b changed (1), c removed (0), three code lines, a blank line and two comments added (3)
  put(repo / "src" / "a.cpp",
                    "int a = 1;\nint b = 20;\nint d = 4;\n\n// a comment\n  /* another */\nint e = 5;\nint f = 6;\n");
  put(repo / "recipes" / "r.toml", "name = \"r\"\n# why\nsteps = 10\n");  // 1
  put(repo / "src" / "new.h", "#pragma once\n/* block\n * more\n */\nint g();\n");  // untracked: 2
  put(repo / "docs" / "x.md", "text\nmore text\n");  // not code
  put(repo / "tests" / "t.cpp", "int t;\n");          // not the submission's code
  git(repo, "commit -q -am edits");  // commits since the baseline count, and so do uncommitted edits:
  put(repo / "src" / "a.cpp",
                    "int a = 1;\nint b = 20;\nint d = 4;\n\n// a comment\n  /* another */\nint e = 5;\nint f = 6;\n"
                    "int h = 7;\n");  // 1 more
  const SourceChanges c = count_changed_source_lines(repo, "base");
  ASSERT_TRUE(c.lines.has_value()) << c.why_unknown;
  EXPECT_EQ(*c.lines, 8);
  EXPECT_EQ(c.files, (std::vector<std::string>{"recipes/r.toml", "src/a.cpp", "src/new.h"}));
  const Json j = to_json(c);
  EXPECT_EQ(j["lines"], 8);
  EXPECT_EQ(j["baseline"], "base");
  EXPECT_FALSE(j.contains("why_unknown"));
  // against itself: nothing changed, and no file listed
  git(repo, "add -A");
  git(repo, "commit -q -m all");
  const SourceChanges none = count_changed_source_lines(repo, "HEAD");
  ASSERT_TRUE(none.lines.has_value());
  EXPECT_EQ(*none.lines, 0);
  EXPECT_TRUE(none.files.empty());
}

TEST(SourceChanges, UnknownWithTheReasonNeverANumber) {
  test::TempDir dir;
  put(dir / "plain" / "src" / "a.cpp", "int a;\n");
  const SourceChanges not_git = count_changed_source_lines(dir / "plain", "base");
  EXPECT_FALSE(not_git.lines.has_value());
  EXPECT_NE(not_git.why_unknown.find("is not a git checkout"), std::string::npos) << not_git.why_unknown;
  EXPECT_TRUE(to_json(not_git)["lines"].is_null());
  const fs::path repo = dir / "repo";
  put(repo / "src" / "a.cpp", "int a;\n");
  git(repo, "init -q");
  git(repo, "add -A");
  git(repo, "commit -q -m base");
  const SourceChanges no_rev = count_changed_source_lines(repo, "no-such-tag");
  EXPECT_FALSE(no_rev.lines.has_value());
  EXPECT_NE(no_rev.why_unknown.find("'no-such-tag' is not in the checkout"), std::string::npos)
      << no_rev.why_unknown;
  EXPECT_NE(no_rev.why_unknown.find("--baseline REV"), std::string::npos);
}

// The pinned baseline (BASELINE: one commit) is the default; another revision may be that commit or
// an ancestor, never a later one such as HEAD, which would hide the tree's own committed changes.
TEST(SourceChanges, ThePinnedBaselineIsTheDefaultAndALaterOneIsRefused) {
  test::TempDir dir;
  const fs::path repo = dir / "repo";
  put(repo / "src" / "a.cpp", "int a;\n");
  git(repo, "init -q");
  git(repo, "add -A");
  git(repo, "commit -q -m first");
  put(repo / "src" / "a.cpp", "int a;\nint b;\n");
  git(repo, "commit -q -am release");
  const std::string release = test::run_command("git -C " + repo.string() + " rev-parse HEAD").output.substr(0, 40);
  put(repo / "BASELINE", release + "\n");
  put(repo / "src" / "mine.cpp", "int mine = 1;\nint more = 2;\n");
  git(repo, "add -A");
  git(repo, "commit -q -m submission");  // the submission's own changes, committed
  const SourceChanges pinned = count_changed_source_lines(repo, kDefaultBaselineRevision);
  ASSERT_TRUE(pinned.lines.has_value()) << pinned.why_unknown;
  EXPECT_EQ(*pinned.lines, 2);
  EXPECT_EQ(pinned.baseline_commit, release);
  EXPECT_EQ(to_json(pinned)["baseline_commit"], release);
  // an ancestor of the pinned commit counts more, and is allowed
  const SourceChanges earlier = count_changed_source_lines(repo, "HEAD~2");
  ASSERT_TRUE(earlier.lines.has_value()) << earlier.why_unknown;
  EXPECT_EQ(*earlier.lines, 3);
  // HEAD (after the pinned commit) is refused, naming both commits
  const std::string refused = test::error_of([&] { resolve_baseline(repo, "HEAD"); });
  EXPECT_NE(refused.find("--baseline HEAD"), std::string::npos) << refused;
  EXPECT_NE(refused.find("is refused"), std::string::npos) << refused;
  EXPECT_NE(refused.find(release), std::string::npos) << refused;
  const SourceChanges counted_anyway = count_changed_source_lines(repo, "HEAD");
  EXPECT_FALSE(counted_anyway.lines.has_value());
  EXPECT_NE(counted_anyway.why_unknown.find("is refused"), std::string::npos);
  // a BASELINE that is not a commit hash: unknown, saying so
  put(repo / "BASELINE", "v1.0\n");
  const SourceChanges bad_pin = count_changed_source_lines(repo, kDefaultBaselineRevision);
  EXPECT_FALSE(bad_pin.lines.has_value());
  EXPECT_NE(bad_pin.why_unknown.find("does not hold the pinned baseline"), std::string::npos) << bad_pin.why_unknown;
}

TEST(SourceChanges, BlankAndCommentLinesDoNotCount) {
  for (const char* line : {"", "   ", "\t", "// c", "  /* c */", " * c", " */"})
    EXPECT_FALSE(counts_as_source_line("src/a.cpp", line)) << "'" << line << "'";
  for (const char* line : {"int x;", "  return 0; // trailing", "#include <x>", "x = a * b;"})
    EXPECT_TRUE(counts_as_source_line("src/a.cu", line)) << line;
  EXPECT_FALSE(counts_as_source_line("CMakeLists.txt", "  # c"));
  EXPECT_TRUE(counts_as_source_line("cmake/X.cmake", "set(A 1)"));
  EXPECT_FALSE(counts_as_source_line("recipes/r.toml", "# c"));
  EXPECT_TRUE(counts_as_source_line("recipes/r.toml", "steps = 1"));
}

}  // namespace
}  // namespace ct
