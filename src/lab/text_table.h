#pragma once
// Plain-text tables for the lab's terminal output, and number formatting shared by its commands
// (fixed decimals come from util/text_format.h, the project's one number formatter).
#include <optional>
#include <string>
#include <vector>

#include "util/text_format.h"

namespace ct::lab {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  // Columns padded to their widest cell; cells that look like numbers are right-aligned; every line
  // starts with `indent` spaces.
  std::string render(size_t indent = 0) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// format_fixed(value, decimals), or "-" when empty.
std::string format_optional(const std::optional<double>& value, int decimals);
// "2026-11-30 12:00:00" UTC.
std::string format_unix_time(double unix_seconds);

}  // namespace ct::lab
