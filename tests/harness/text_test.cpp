// xml_escape and the number formats.
#include <cmath>

#include "harness/html.h"
#include "harness/xml_check.h"
#include "test_support.h"
#include "util/text_format.h"

namespace ct {
namespace {

TEST(XmlEscape, MarkupCharacters) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(xml_escape(""), "");
}

TEST(XmlEscape, KeepsValidUtf8AndReplacesTheRest) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(xml_escape("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(xml_escape("tab\tnl\ncr\r"), "tab\tnl\ncr\r");
  EXPECT_EQ(xml_escape(std::string("a\x00" "b", 3)), "a" + fffd + "b");
  EXPECT_EQ(xml_escape("\x1b[31m"), fffd + "[31m");
  EXPECT_EQ(xml_escape("\x7f"), fffd);
  EXPECT_EQ(xml_escape("\xff"), fffd);
  EXPECT_EQ(xml_escape("\xC3"), fffd);                   // truncated sequence
  EXPECT_EQ(xml_escape("\xC0\xAF"), fffd + fffd);        // overlong '/'
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), fffd + fffd + fffd);  // a UTF-16 surrogate
  EXPECT_EQ(xml_escape("\xEF\xBF\xBE"), fffd);           // U+FFFE, not allowed in XML
  EXPECT_EQ(xml_escape("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // past U+10FFFF
}

TEST(XmlEscape, EveryByteStringGivesWellFormedXml) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_EQ(test::xml_problem("<p>" + xml_escape(all) + "</p>"), "");
  EXPECT_EQ(test::xml_problem("<p a=\"" + xml_escape(all) + "\"/>"), "");
}

TEST(TextFormat, Numbers) {
  EXPECT_EQ(format_fixed(1.73449, 4), "1.7345");
  EXPECT_EQ(format_fixed(std::nan(""), 2), "NaN");
  EXPECT_EQ(format_fixed(-INFINITY, 2), "-Inf");
  EXPECT_EQ(format_seconds(600), "600 s");
  EXPECT_EQ(format_seconds(597.9), "597.9 s");
  EXPECT_EQ(format_seconds(600.04), "600.04 s");
  EXPECT_EQ(format_seconds(0), "0 s");
  EXPECT_EQ(format_count(7340032), "7,340,032");
  EXPECT_EQ(format_count(-1234), "-1,234");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_si(2.1e11), "210 G");
  EXPECT_EQ(format_si(4711.2), "4.71 k");
  EXPECT_EQ(format_si(0.41), "0.41");
  EXPECT_EQ(format_si(97517568), "97.5 M");
  EXPECT_EQ(format_duration(12.36), "12.3s");
  EXPECT_EQ(format_duration(75), "1m 15s");
  EXPECT_EQ(format_duration(599.9), "9m 59s");  // rounded down: never reads as the budget
  EXPECT_EQ(format_duration(3725), "1h 02m");
  EXPECT_EQ(format_duration(14397.9), "3h 59m");
}

}  // namespace
}  // namespace ct
