#include "util/json.h"

#include "util/files.h"

namespace ct {

Json read_json_file(const std::filesystem::path& path) {
  std::string text = read_file(path);
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(path.string(), ": invalid JSON at byte ", e.byte, ": ", e.what());
  }
}

}  // namespace ct
