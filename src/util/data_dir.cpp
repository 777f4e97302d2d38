#include "util/data_dir.h"

#include <cstdlib>

#include "util/error.h"

namespace ct {

std::filesystem::path resolve_data_dir(const std::string& option_value) {
  namespace fs = std::filesystem;
  if (!option_value.empty()) {
    check(fs::is_directory(option_value), "--data ", option_value, ": not a folder");
    return option_value;
  }
  if (const char* env = std::getenv("CLOCKTRAIN_DATA"); env && *env) {
    check(fs::is_directory(env), "CLOCKTRAIN_DATA=", env, ": not a folder");
    return env;
  }
  fs::path beside_source = fs::path(CLOCKTRAIN_SOURCE_DIR) / ".." / "shared" / "data";
  if (fs::is_directory(beside_source)) return fs::weakly_canonical(beside_source);
  fs::path beside_cwd = fs::path("..") / "shared" / "data";
  if (fs::is_directory(beside_cwd)) return fs::weakly_canonical(beside_cwd);
  fail("no data folder: pass --data DIR or set CLOCKTRAIN_DATA (expected corpus/, val/, eval_bundle/ inside)");
}

}  // namespace ct
