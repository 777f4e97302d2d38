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

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column 13: "
// prefix, which repeats what the error's byte offset says.
std::string reason_of(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const size_t colon = what.find(": ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

template <typename J>
J parse_guarded(std::string_view text, const std::string& where) {
  const size_t deep_at = too_deep_at(text);
  check(deep_at == std::string_view::npos, where, ": invalid JSON at byte ", deep_at + 1,
        ": arrays/objects nested deeper than ", kMaxJsonDepth, " levels");
  try {
    return J::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(where, ": invalid JSON at byte ", e.byte, ": ", reason_of(e));
  } catch (const nlohmann::json::exception& e) {
    // The lexer throws out_of_range (not parse_error) for a number beyond double, e.g. 1e999.
    fail(where, ": invalid JSON: ", reason_of(e));
  }
}

}  // namespace

Json json_from_text(std::string_view text, const std::string& where) { return parse_guarded<Json>(text, where); }

OrderedJson ordered_json_from_text(std::string_view text, const std::string& where) {
  return parse_guarded<OrderedJson>(text, where);
}

Json read_json_file(const std::filesystem::path& path) { return json_from_text(read_file(path), path.string()); }

}  // namespace ct
