#pragma once
// Shared helpers for the unit tests: where the data, python3 and the binary are, scratch folders,
// and running a command to capture its output.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "util/error.h"

// Defaults when the environment does not say (tests/CMakeLists.txt compiles the real ones in).
#ifndef CLOCKTRAIN_TEST_DATA
#define CLOCKTRAIN_TEST_DATA "../shared/data"
#endif
#ifndef CLOCKTRAIN_TEST_SOURCE_DIR
#define CLOCKTRAIN_TEST_SOURCE_DIR "."
#endif
#ifndef CLOCKTRAIN_TEST_BIN
#define CLOCKTRAIN_TEST_BIN "clocktrain"
#endif

namespace ct::test {

namespace fs = std::filesystem;

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

inline fs::path data_dir() { return env_or("CLOCKTRAIN_DATA", CLOCKTRAIN_TEST_DATA); }
inline fs::path source_dir() { return env_or("CLOCKTRAIN_SOURCE_DIR", CLOCKTRAIN_TEST_SOURCE_DIR); }
inline std::string python() { return env_or("CLOCKTRAIN_PYTHON", "/usr/bin/python3"); }
inline std::string clocktrain_bin() { return env_or("CLOCKTRAIN_BIN", CLOCKTRAIN_TEST_BIN); }

// True when `interpreter` (by default the system python3) runs and imports every module named (space
// separated).
inline bool python_has(const std::string& modules, const std::string& interpreter = python()) {
  std::string list;
  for (char c : modules) list += (c == ' ' ? ',' : c);
  return std::system((interpreter + " -c 'import " + list + "' >/dev/null 2>&1").c_str()) == 0;
}

// Whether a test may skip for want of a Python reference or of Parquet support: not under the test
// command (scripts/test.sh sets CLOCKTRAIN_TESTS_COMPLETE=1 once install-deps.sh has installed them).
inline bool references_required() { return env_or("CLOCKTRAIN_TESTS_COMPLETE", "") == "1"; }

// In a test body: when `ok` is false, a skip that says `why`, or a failure where everything the test
// command installs is required (references_required()).
#define CT_NEED(ok, why)                                                                         \
  do {                                                                                           \
    if (!(ok)) {                                                                                 \
      if (::ct::test::references_required())                                                     \
        FAIL() << (why) << "; the test command installs it (scripts/install-deps.sh)";          \
      GTEST_SKIP() << (why);                                                                     \
    }                                                                                            \
  } while (0)

// In a test body: CT_NEED the system python3 to import `modules` (space separated).
#define CT_NEED_PYTHON_MODULES(modules, why) CT_NEED(::ct::test::python_has(modules), why)

// How many times `needle` occurs in `text` (overlapping occurrences count).
inline size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

// The message of the ct::Error that fn() throws, or "" when it throws none.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A fresh scratch folder per test, removed afterwards.
class TempDir {
 public:
  // Named after the running test and the process; `tag` tells apart two folders of one test (e.g. a
  // suite's shared folder, made during its first test, from that test's own).
  explicit TempDir(const std::string& tag = "") {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "ct";
    if (!tag.empty()) name += "-" + tag;
    path_ = fs::temp_directory_path() / ("clocktrain-test-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& s) const { return path_ / s; }

 private:
  fs::path path_;
};

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// XORs the byte at `offset` of a file with `mask`: damage of the kind a checksum must catch (a
// negative offset counts from the end).
inline void flip_byte(const fs::path& path, int64_t offset, unsigned char mask = 0x80) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(file.good()) << path;
  file.seekg(0, std::ios::end);
  const int64_t at = offset >= 0 ? offset : static_cast<int64_t>(file.tellg()) + offset;
  file.seekg(at);
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ static_cast<char>(mask));
  file.seekp(at);
  file.write(&byte, 1);
  ASSERT_TRUE(file.good()) << path << " at " << at;
}

// Runs a shell command, capturing stdout and stderr.
inline CommandResult run_command(const std::string& command) {
  std::string full = command + " 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  CommandResult result{-1, ""};
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace ct::test
