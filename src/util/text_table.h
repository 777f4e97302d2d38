#pragma once
// Plain-text tables for the terminal (the board, the lab): columns padded to their widest cell,
// measured in code points so that UTF-8 text lines up, two spaces between columns, a rule of dashes
// under the header, no trailing spaces.
#include <string>
#include <vector>

namespace ct {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  // Columns right-aligned, header included (one flag per column). Without it, body cells that look like
  // numbers are right-aligned and headers left-aligned.
  void align_right(std::vector<bool> columns) { right_ = std::move(columns); }
  // Every line starts with `indent` spaces.
  std::string render(size_t indent = 0) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;
};

// Display width in code points (UTF-8 continuation bytes do not count).
size_t display_width(const std::string& text);

}  // namespace ct
