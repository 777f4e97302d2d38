#include "util/text_table.h"

#include <algorithm>
#include <cctype>

namespace ct {

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

size_t display_width(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

std::string TextTable::render(size_t indent) const {
  std::vector<size_t> widths(headers_.size(), 0);
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = display_width(headers_[c]);
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  const auto right = [&](size_t c, const std::string& cell, bool header) {
    if (!right_.empty()) return c < right_.size() && right_[c];
    return !header && looks_numeric(cell);
  };
  const auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out;
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(widths[c] - std::min(widths[c], display_width(cell)), ' ');
      if (c) out += "  ";
      out += right(c, cell, header) ? pad + cell : cell + pad;
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

}  // namespace ct
