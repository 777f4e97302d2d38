#pragma once
// A CSV reader (RFC 4180): fields separated by commas, records by LF or CRLF; a field in double
// quotes may hold commas, line breaks and doubled quotes (""). A quote inside an unquoted field is
// kept as a literal character (as Python's csv module does). A UTF-8 byte order mark is skipped.
// Errors name the source, the line and what was expected.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ct {

struct CsvTable {
  std::string source;                          // file name, for messages
  std::vector<std::string> header;             // the first record
  std::vector<std::vector<std::string>> rows;  // every later record, each with header.size() fields
  std::vector<int64_t> row_lines;              // 1-based line where each row starts

  // Index of the named column; an error naming the source and the column when absent.
  size_t column(std::string_view name) const;
};

// Parses text; `source` names it in errors. Every row must have as many fields as the header
// (blank lines are skipped).
CsvTable parse_csv(std::string_view text, const std::string& source);
CsvTable read_csv_file(const std::filesystem::path& path);

}  // namespace ct
