#pragma once
// The one error type of clocktrain. Messages name the file, line or field and what was expected;
// the CLI prints them and exits non-zero.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ct {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Concatenates anything streamable: str("line ", 3, ": expected ", what).
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(str(std::forward<Args>(args)...));
}

// check(cond, "file.bin: header: expected magic 20240520, got ", magic)
template <typename... Args>
void check(bool condition, Args&&... args) {
  if (!condition) fail(std::forward<Args>(args)...);
}

}  // namespace ct
