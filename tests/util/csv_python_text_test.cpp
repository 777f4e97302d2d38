// util/csv.h (quoted fields, errors with lines) and util/python_text.h (str.strip semantics).
#include "test_support.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/python_text.h"

namespace ct {
namespace {

TEST(Csv, QuotedFieldsCommasNewlinesAndDoubledQuotes) {
  auto t = parse_csv("\xEF\xBB\xBF" "a,b,c\r\n1,\"x, y\",\"say \"\"hi\"\"\"\n2,\"two\nlines\",\n\n3, sp ,it's\n", "t.csv");
  ASSERT_EQ(t.header, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"1", "x, y", "say \"hi\""}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"2", "two\nlines", ""}));
  EXPECT_EQ(t.rows[2], (std::vector<std::string>{"3", " sp ", "it's"}));
  EXPECT_EQ(t.row_lines, (std::vector<int64_t>{2, 3, 6}));
  EXPECT_EQ(t.column("c"), 2u);
}

TEST(Csv, ErrorsNameTheLine) {
  auto message = [](const std::string& text) {
    try {
      parse_csv(text, "bad.csv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("a,b\n1,2\n3\n"), "bad.csv: line 3: expected 2 fields (as in the header), got 1");
  EXPECT_EQ(message("a,b\n1,\"open\n"), "bad.csv: line 2: unterminated quoted field");
  EXPECT_NE(message("a,b\n1,\"x\"y\n").find("bad.csv: line 2: expected ','"), std::string::npos);
  EXPECT_EQ(message(""), "bad.csv: expected a header line, the file is empty");
  auto t = parse_csv("a,b\n1,2\n", "ok.csv");
  try {
    t.column("Random baseline");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "ok.csv: line 1: expected a column named 'Random baseline' in the header");
  }
}

TEST(PythonText, StripMatchesPythonWhitespace) {
  EXPECT_EQ(python_strip("  a b \t\n"), "a b");
  EXPECT_EQ(python_strip("\xC2\xA0x\xE3\x80\x80"), "x");             // NBSP, ideographic space
  EXPECT_EQ(python_strip("\x1c\x1f\xC2\x85x\xE2\x80\xA8"), "x");      // \x1c-\x1f, NEL, U+2028
  EXPECT_EQ(python_strip("\xE2\x80\x8Bx\xE2\x80\x8B"), "\xE2\x80\x8Bx\xE2\x80\x8B");  // ZWSP is not space
  EXPECT_EQ(python_strip("\xEF\xBB\xBFx"), "\xEF\xBB\xBFx");          // BOM is not space
  EXPECT_EQ(python_strip(" \xFF "), "\xFF");                          // invalid UTF-8 stays
  EXPECT_EQ(python_strip("   "), "");
  EXPECT_EQ(python_strip(""), "");
  // Every code point agrees with the system python3's str.isspace().
  auto r = test::run_command(test::python() +
                             " -c \"import sys; print(' '.join(str(i) for i in range(sys.maxunicode+1) if chr(i).isspace()))\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string mine;
  for (char32_t c = 0; c <= 0x10FFFF; ++c)
    if (python_isspace(c)) mine += (mine.empty() ? "" : " ") + std::to_string(static_cast<uint32_t>(c));
  EXPECT_EQ(mine + "\n", r.output);
}

}  // namespace
}  // namespace ct
