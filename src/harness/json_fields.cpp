#include "harness/json_fields.h"

#include <cmath>
#include <limits>

#include "util/error.h"

namespace ct {

std::string json_excerpt(const Json& value) {
  std::string text = value.dump(-1, ' ', true, Json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

FieldReader::FieldReader(const Json& object, std::string where, std::string path)
    : object_(object), where_(std::move(where)), path_(std::move(path)) {
  if (!object_.is_object()) {
    if (path_.empty()) fail(where_, ": expected a JSON object, got ", json_excerpt(object_));
    fail(where_, ": field '", path_, "': expected an object, got ", json_excerpt(object_));
  }
}

std::string FieldReader::field_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void FieldReader::fail_field(const std::string& key, const std::string& expected) const {
  auto it = object_.find(key);
  if (it == object_.end()) fail(where_, ": missing field '", field_path(key), "' (expected ", expected, ")");
  fail(where_, ": field '", field_path(key), "': expected ", expected, ", got ", json_excerpt(*it));
}

bool FieldReader::has(const std::string& key) const { return object_.contains(key); }

bool FieldReader::is_null(const std::string& key) const {
  auto it = object_.find(key);
  return it == object_.end() || it->is_null();
}

const Json& FieldReader::get(const std::string& key) const {
  auto it = object_.find(key);
  if (it == object_.end()) fail(where_, ": missing field '", field_path(key), "'");
  return *it;
}

std::string FieldReader::string(const std::string& key) const {
  const Json& v = get(key);
  if (!v.is_string()) fail_field(key, "a string");
  return v.get<std::string>();
}

std::string FieldReader::string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

bool FieldReader::boolean(const std::string& key) const {
  const Json& v = get(key);
  if (!v.is_boolean()) fail_field(key, "true or false");
  return v.get<bool>();
}

double FieldReader::finite(const std::string& key) const {
  const Json& v = get(key);
  if (!v.is_number()) fail_field(key, "a finite number");
  double x = v.get<double>();
  if (!std::isfinite(x)) fail_field(key, "a finite number");
  return x;
}

double FieldReader::non_negative(const std::string& key) const {
  double x = finite(key);
  if (x < 0) fail_field(key, "a finite number >= 0");
  return x;
}

std::optional<double> FieldReader::finite_or_null(const std::string& key) const {
  if (is_null(key)) return std::nullopt;
  const Json& v = get(key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) fail_field(key, "a finite number or null");
  return v.get<double>();
}

double FieldReader::number_or_nan(const std::string& key) const {
  if (is_null(key)) return std::numeric_limits<double>::quiet_NaN();
  const Json& v = get(key);
  if (!v.is_number()) fail_field(key, "a number or null");
  return v.get<double>();
}

int64_t FieldReader::integer(const std::string& key, int64_t min_value, int64_t max_value) const {
  const Json& v = get(key);
  std::string range = str("an integer in [", min_value, ", ", max_value, "]");
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail_field(key, range);
    int64_t x = static_cast<int64_t>(u);
    if (x < min_value || x > max_value) fail_field(key, range);
    return x;
  }
  if (!v.is_number_integer()) fail_field(key, range);
  int64_t x = v.get<int64_t>();
  if (x < min_value || x > max_value) fail_field(key, range);
  return x;
}

uint64_t FieldReader::unsigned_integer(const std::string& key) const {
  const Json& v = get(key);
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  fail_field(key, "an integer >= 0");
}

FieldReader FieldReader::object(const std::string& key) const {
  const Json& v = get(key);
  if (!v.is_object()) fail_field(key, "an object");
  return FieldReader(v, where_, field_path(key));
}

const Json& FieldReader::array(const std::string& key) const {
  const Json& v = get(key);
  if (!v.is_array()) fail_field(key, "an array");
  return v;
}

FieldReader FieldReader::element(const Json& array, size_t index, const std::string& key) const {
  return FieldReader(array.at(index), where_, str(field_path(key), "[", index, "]"));
}

std::string FieldReader::element_string(const Json& array, size_t index, const std::string& key) const {
  const Json& v = array.at(index);
  if (!v.is_string())
    fail(where_, ": field '", field_path(key), "[", index, "]': expected a string, got ", json_excerpt(v));
  return v.get<std::string>();
}

}  // namespace ct
