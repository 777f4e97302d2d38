// util/json.h: every JSON text problem becomes a ct::Error that names the file and the byte.
#include "util/json.h"

#include <gmock/gmock.h>

#include "test_support.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {
namespace {

using ::testing::HasSubstr;

std::string json_error(const std::string& text) {
  try {
    json_from_text(text, "input.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonText, ParsesAnObject) {
  const Json j = json_from_text(R"({"a": [1, 2.5, "x"], "b": {"c": null}})", "input.json");
  EXPECT_EQ(j["a"][1].get<double>(), 2.5);
  EXPECT_TRUE(j["b"]["c"].is_null());
}

TEST(JsonText, SyntaxErrorNamesTheFileAndByte) {
  EXPECT_THAT(json_error(R"({"a": [1, 2,]})"), HasSubstr("input.json: invalid JSON at byte 13"));
}

// Found by fuzz_json_text: nlohmann::json throws out_of_range, not parse_error, for a number
// beyond double's range, and it escaped as another exception type.
TEST(JsonText, NumberOutOfRangeIsACtError) {
  EXPECT_THAT(json_error(R"({"a": [1, 1e999]})"), HasSubstr("input.json: invalid JSON: "));
  EXPECT_THAT(json_error(R"({"a": [1, 1e999]})"), HasSubstr("1e999"));
  EXPECT_THAT(json_error("-1e3087047758"), HasSubstr("number overflow"));
}

// A hostile file of deeply nested arrays parses in nlohmann::json, but copying, comparing or dumping
// the value recurses once per level and overflows the stack: refused before parsing.
TEST(JsonText, RefusesNestingDeeperThanTheLimit) {
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  EXPECT_THAT(json_error(deep), HasSubstr(str("input.json: invalid JSON at byte ", kMaxJsonDepth + 1, ": arrays/objects nested deeper than")));
  const std::string limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(json_error(limit), "");
  // Brackets inside strings do not count.
  EXPECT_EQ(json_error("[\"" + std::string(10'000, '[') + "\\\"\"]"), "");
}

TEST(JsonFile, ErrorsNameThePath) {
  test::TempDir dir;
  write_file_atomic(dir / "bad.json", "{\"a\": tru}");
  try {
    read_json_file(dir / "bad.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / "bad.json").string() + ": invalid JSON at byte"));
  }
}

}  // namespace
}  // namespace ct
