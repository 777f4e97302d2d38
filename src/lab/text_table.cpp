#include "lab/text_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "util/clock.h"

namespace ct::lab {

namespace {
bool looks_numeric(const std::string& cell) {
  if (cell.empty()) return false;
  size_t i = (cell[0] == '-' || cell[0] == '+') ? 1 : 0;
  if (i >= cell.size()) return false;
  return std::all_of(cell.begin() + static_cast<long>(i), cell.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '-' || c == '+' || c == '%';
  });
}
}  // namespace

std::string TextTable::render(size_t indent) const {
  std::vector<size_t> widths(headers_.size(), 0);
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = headers_[c].size();
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out;
    for (size_t c = 0; c < widths.size(); ++c) {
      std::string cell = c < cells.size() ? cells[c] : "";
      std::string pad(widths[c] - std::min(widths[c], cell.size()), ' ');
      bool right = !header && looks_numeric(cell);
      if (c) out += "  ";
      out += right ? pad + cell : cell + (c + 1 < widths.size() ? pad : "");
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return std::string(indent, ' ') + out + "\n";
  };
  std::string out = line(headers_, true);
  std::vector<std::string> rule;
  for (size_t w : widths) rule.push_back(std::string(w, '-'));
  out += line(rule, true);
  for (const auto& row : rows_) out += line(row, false);
  return out;
}

std::string format_optional(const std::optional<double>& value, int decimals) {
  return value ? format_fixed(*value, decimals) : "-";
}

std::string format_unix_time(double unix_seconds) {
  return utc_text(unix_seconds, "%Y-%m-%d %H:%M:%S");
}

}  // namespace ct::lab
