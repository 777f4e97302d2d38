#include "util/json.h"

#include "util/files.h"

namespace ct {

namespace {

// The byte offset where `text` first nests arrays/objects deeper than kMaxJsonDepth, or npos. Only a
// guard: brackets inside strings are skipped, and the parser judges everything else.
size_t too_deep_at(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Json json_from_text(std::string_view text, const std::string& where) {
  const size_t deep_at = too_deep_at(text);
  check(deep_at == std::string_view::npos, where, ": invalid JSON at byte ", deep_at + 1,
        ": arrays/objects nested deeper than ", kMaxJsonDepth, " levels");
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(where, ": invalid JSON at byte ", e.byte, ": ", e.what());
  } catch (const nlohmann::json::exception& e) {
    // The lexer throws out_of_range (not parse_error) for a number beyond double, e.g. 1e999.
    fail(where, ": invalid JSON: ", e.what());
  }
}

Json read_json_file(const std::filesystem::path& path) { return json_from_text(read_file(path), path.string()); }

}  // namespace ct
