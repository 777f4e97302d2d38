// util/json.h: every JSON text problem becomes a ct::Error that names the file and the byte.
#include "util/json.h"

#include <gmock/gmock.h>

#include <functional>
#include <limits>

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

std::string field_error(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// nlohmann's get<int64_t>() casts a float unchecked (1e300 is undefined behaviour, 2.5 becomes 2)
// and wraps -1 into a huge unsigned: integer fields take only numbers that are exactly integers of
// the field's type (an integral float such as 4.0 included).
TEST(JsonField, IntegersMustFitExactly) {
  const Json j = json_from_text(R"({"huge": 1e300, "half": 2.5, "four": 4.0, "minus": -1, "big": 9223372036854775808,
                                    "u64max": 18446744073709551615, "three_g": 3000000000, "list": [1, 2.5], "ok": [1, 2]})",
                                "input.json");
  EXPECT_THAT(field_error([&] { json_field<int64_t>(j, "huge", "input.json"); }),
              HasSubstr("input.json: field 'huge': expected an integer in ["));
  EXPECT_THAT(field_error([&] { json_field<int64_t>(j, "half", "input.json"); }), HasSubstr("field 'half'"));
  EXPECT_EQ(json_field<int64_t>(j, "four", "input.json"), 4);
  EXPECT_EQ(json_field<int64_t>(j, "minus", "input.json"), -1);
  EXPECT_THAT(field_error([&] { json_field<uint64_t>(j, "minus", "input.json"); }), HasSubstr("field 'minus'"));
  EXPECT_THAT(field_error([&] { json_field<int64_t>(j, "big", "input.json"); }), HasSubstr("field 'big'"));
  EXPECT_EQ(json_field<uint64_t>(j, "big", "input.json"), uint64_t{1} << 63);
  EXPECT_EQ(json_field<uint64_t>(j, "u64max", "input.json"), std::numeric_limits<uint64_t>::max());
  EXPECT_THAT(field_error([&] { json_field<int32_t>(j, "three_g", "input.json"); }), HasSubstr("field 'three_g'"));
  EXPECT_THAT(field_error([&] { json_field<std::vector<int64_t>>(j, "list", "input.json"); }),
              HasSubstr("field 'list'[1]: expected an integer"));
  EXPECT_EQ(json_field<std::vector<int64_t>>(j, "ok", "input.json"), (std::vector<int64_t>{1, 2}));
  EXPECT_THAT(field_error([&] { json_field<std::string>(j, "ok", "input.json"); }),
              HasSubstr("input.json: field 'ok': wrong type"));
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
