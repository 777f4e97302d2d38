#pragma once
// JSON through nlohmann::json, with helpers that turn parse and type errors into ct::Error
// naming the file and the field.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace ct {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Arrays and objects nested deeper than this are refused before parsing: nlohmann::json copies,
// compares and dumps values recursively, so a hostile file of a million '[' would overflow the stack
// (real clocktrain files nest fewer than ten levels).
inline constexpr int kMaxJsonDepth = 256;

// Parses JSON text; errors say "<where>: invalid JSON at byte N: <reason>" (or name the byte where the
// nesting passes kMaxJsonDepth). Every JSON clocktrain reads goes through this guard.
Json json_from_text(std::string_view text, const std::string& where);

// The same, keeping the objects' key order (for rows that are written back as they were read).
OrderedJson ordered_json_from_text(std::string_view text, const std::string& where);

// Parses a whole file (json_from_text on its contents); errors name the file and the byte offset.
Json read_json_file(const std::filesystem::path& path);

// Looks up `key` in object `j` as type T; errors say "<where>: field '<key>': expected <type>".
template <typename T>
T json_field(const Json& j, const std::string& key, const std::string& where);

// Same, with a default when the field is absent.
template <typename T>
T json_field_or(const Json& j, const std::string& key, const T& fallback, const std::string& where);

}  // namespace ct

#include "util/json_impl.h"
