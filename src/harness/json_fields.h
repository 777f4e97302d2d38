#pragma once
// Strict reading of JSON records that may come from someone else (result.json, metrics.jsonl):
// each accessor checks the type and range and fails with "<where>: field '<path>': expected ...,
// got ...", where <path> is the dotted path from the record's root ("gate.checks[1].passed").
#include <cstdint>
#include <optional>
#include <string>

#include "util/json.h"

namespace ct {

class FieldReader {
 public:
  // `where` names the source ("runs/a/result.json", "metrics.jsonl:12"); `path` is this object's
  // own path from the root ("" for the root itself).
  FieldReader(const Json& object, std::string where, std::string path = "");

  bool has(const std::string& key) const;
  bool is_null(const std::string& key) const;  // absent or null

  std::string string(const std::string& key) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
  bool boolean(const std::string& key) const;
  double finite(const std::string& key) const;               // a finite number
  double non_negative(const std::string& key) const;         // finite and >= 0
  std::optional<double> finite_or_null(const std::string& key) const;  // null or absent -> nullopt
  double number_or_nan(const std::string& key) const;        // a number; null or absent -> NaN
  int64_t integer(const std::string& key, int64_t min_value, int64_t max_value) const;
  uint64_t unsigned_integer(const std::string& key) const;
  FieldReader object(const std::string& key) const;
  const Json& array(const std::string& key) const;
  FieldReader element(const Json& array, size_t index, const std::string& key) const;  // an object
  std::string element_string(const Json& array, size_t index, const std::string& key) const;

  const Json& json() const { return object_; }
  const std::string& where() const { return where_; }
  std::string field_path(const std::string& key) const;

  [[noreturn]] void fail_field(const std::string& key, const std::string& expected) const;

 private:
  const Json& get(const std::string& key) const;  // required
  const Json& object_;
  std::string where_;
  std::string path_;
};

// A short, printable rendering of a JSON value for error messages (at most ~40 characters).
std::string json_excerpt(const Json& value);

}  // namespace ct
