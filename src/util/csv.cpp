#include "util/csv.h"

#include "util/error.h"
#include "util/files.h"

namespace ct {

size_t CsvTable::column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  fail(source, ": line 1: expected a column named '", name, "' in the header");
}

namespace {

// Splits the text into records of fields; each record remembers the line it starts on.
struct Record {
  std::vector<std::string> fields;
  int64_t line = 0;
  bool blank = false;  // an empty line (no characters at all)
};

std::vector<Record> split_records(std::string_view text, const std::string& source) {
  std::vector<Record> records;
  size_t pos = 0;
  int64_t line = 1;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;
  while (pos < text.size()) {
    Record rec;
    rec.line = line;
    std::string field;
    bool record_done = false;
    bool any_char = false;
    while (!record_done) {
      if (pos < text.size() && text[pos] == '"') {
        // Quoted field: runs to the closing quote; "" is a literal quote.
        const int64_t open_line = line;
        ++pos;
        any_char = true;
        while (true) {
          check(pos < text.size(), source, ": line ", open_line, ": unterminated quoted field");
          char c = text[pos++];
          if (c == '"') {
            if (pos < text.size() && text[pos] == '"') {
              field += '"';
              ++pos;
              continue;
            }
            break;
          }
          if (c == '\n') ++line;
          field += c;
        }
        // After the closing quote: a comma, a line end or the end of the text.
        if (pos < text.size() && text[pos] == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ++pos;
        check(pos >= text.size() || text[pos] == ',' || text[pos] == '\n', source, ": line ", line,
              ": expected ',' or the end of the line after a closing quote, got '", text[pos], "'");
      } else {
        while (pos < text.size() && text[pos] != ',' && text[pos] != '\n') {
          if (text[pos] == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') {
            ++pos;
            break;
          }
          field += text[pos++];
          any_char = true;
        }
      }
      rec.fields.push_back(std::move(field));
      field.clear();
      if (pos >= text.size()) {
        record_done = true;
      } else if (text[pos] == ',') {
        ++pos;
        any_char = true;
        if (pos >= text.size()) rec.fields.emplace_back();  // trailing comma at the end of the text
        record_done = pos >= text.size();
      } else {  // '\n'
        ++pos;
        ++line;
        record_done = true;
      }
    }
    rec.blank = !any_char;
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace

CsvTable parse_csv(std::string_view text, const std::string& source) {
  CsvTable table;
  table.source = source;
  auto records = split_records(text, source);
  bool have_header = false;
  for (auto& rec : records) {
    if (rec.blank) continue;
    if (!have_header) {
      table.header = std::move(rec.fields);
      have_header = true;
      continue;
    }
    check(rec.fields.size() == table.header.size(), source, ": line ", rec.line, ": expected ",
          table.header.size(), " fields (as in the header), got ", rec.fields.size());
    table.rows.push_back(std::move(rec.fields));
    table.row_lines.push_back(rec.line);
  }
  check(have_header, source, ": expected a header line, the file is empty");
  return table;
}

CsvTable read_csv_file(const std::filesystem::path& path) { return parse_csv(read_file(path), path.string()); }

}  // namespace ct
