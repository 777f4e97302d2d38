#pragma once
// Shared by the libFuzzer targets. Each target feeds its input bytes to a real parsing entry point.
// A ct::Error is the expected answer to bad input; anything else is a finding: a crash, a sanitizer
// report, an exception of another type, a broken invariant (fuzz_require), a hang (-timeout) or an
// allocation beyond the limit (-rss_limit_mb / -malloc_limit_mb).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

#include "util/error.h"

namespace ct::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`; swallows ct::Error, aborts (a finding) on any other exception, naming its type.
template <typename Parse>
void accept_only_ct_errors(Parse&& parse) {
  try {
    std::forward<Parse>(parse)();
  } catch (const ct::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FINDING: exception other than ct::Error: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "FINDING: exception other than ct::Error (not a std::exception)\n");
    std::abort();
  }
}

// An invariant of parsed data that must hold whatever the input (e.g. decode(encode(x)) == x).
inline void fuzz_require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "FINDING: broken invariant: %s\n", what);
    std::abort();
  }
}

// Splits `input` at the first NUL byte: targets whose parser reads two files take both from one
// input this way ({input, ""} when there is no NUL).
inline std::pair<std::string_view, std::string_view> split_at_nul(std::string_view input) {
  const size_t at = input.find('\0');
  if (at == std::string_view::npos) return {input, {}};
  return {input.substr(0, at), input.substr(at + 1)};
}

// A scratch folder for entry points that take a path: one per process (libFuzzer runs inputs one
// after another in a process), removed at exit.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() / ("clocktrain-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  // Writes `bytes` to <scratch>/<name> (replacing it) and returns the path.
  std::filesystem::path write(const std::string& name, std::string_view bytes) const {
    const auto path = path_ / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
      std::abort();
    }
    return path;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline const ScratchDir& scratch() {
  static const ScratchDir dir;
  return dir;
}

}  // namespace ct::fuzz
