#pragma once
// JSON through nlohmann::json, with helpers that turn parse and type errors into ct::Error
// naming the file and the field.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace ct {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Parses a whole file; errors name the file and the byte offset.
Json read_json_file(const std::filesystem::path& path);

// Looks up `key` in object `j` as type T; errors say "<where>: field '<key>': expected <type>".
template <typename T>
T json_field(const Json& j, const std::string& key, const std::string& where);

// Same, with a default when the field is absent.
template <typename T>
T json_field_or(const Json& j, const std::string& key, const T& fallback, const std::string& where);

}  // namespace ct

#include "util/json_impl.h"
