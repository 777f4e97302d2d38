#pragma once
#include "util/error.h"

namespace ct {

template <typename T>
T json_field(const Json& j, const std::string& key, const std::string& where) {
  check(j.is_object(), where, ": expected a JSON object");
  auto it = j.find(key);
  check(it != j.end(), where, ": missing field '", key, "'");
  try {
    return it->template get<T>();
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": field '", key, "': wrong type (", e.what(), ")");
  }
}

template <typename T>
T json_field_or(const Json& j, const std::string& key, const T& fallback, const std::string& where) {
  check(j.is_object(), where, ": expected a JSON object");
  if (!j.contains(key)) return fallback;
  return json_field<T>(j, key, where);
}

}  // namespace ct
