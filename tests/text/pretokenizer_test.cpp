// The pre-tokenizer against golden splits computed by Python's `regex` module
// (tests/python/gen_pretokenize_golden.py -> tests/golden/pretokenize.jsonl).
#include "text/pretokenizer.h"

#include <gmock/gmock.h>

#include <random>

#include "test_support.h"
#include "text/base64.h"
#include "util/files.h"
#include "util/json.h"

namespace ct {
namespace {

fs::path golden_path() { return test::source_dir() / "tests/golden/pretokenize.jsonl"; }

std::vector<size_t> chunk_lengths(std::string_view text) {
  std::vector<size_t> lengths;
  for (std::string_view chunk : pretokenize(text)) lengths.push_back(chunk.size());
  return lengths;
}

TEST(Pretokenizer, MatchesGoldenSplitsFromPythonRegex) {
  const std::string golden = read_file(golden_path());
  size_t cases = 0, line_begin = 0;
  while (line_begin < golden.size()) {
    size_t line_end = golden.find('\n', line_begin);
    if (line_end == std::string::npos) line_end = golden.size();
    const Json c = Json::parse(golden.substr(line_begin, line_end - line_begin));
    line_begin = line_end + 1;
    const auto name = c["name"].get<std::string>();
    const auto input = base64_decode(c["input_b64"].get<std::string>());
    ASSERT_TRUE(input.has_value()) << name;
    const auto expected = c["chunk_lengths"].get<std::vector<size_t>>();
    EXPECT_EQ(chunk_lengths(*input), expected) << "case " << name;
    ++cases;
  }
  // The file covers fixed cases, random strings and corpus excerpts: make sure it was all read.
  EXPECT_GE(cases, 500u);
}

TEST(Pretokenizer, GoldenFileMatchesAFreshGeneration) {
  CT_NEED_PYTHON_MODULES("regex", "python3-regex is not importable");
  const auto script = test::source_dir() / "tests/python/gen_pretokenize_golden.py";
  auto result = test::run_command(test::python() + " " + script.string() + " --check " + golden_path().string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(Pretokenizer, HandWrittenExamples) {
  auto split = [](std::string_view text) {
    std::vector<std::string> out;
    for (auto chunk : pretokenize(text)) out.emplace_back(chunk);
    return out;
  };
  using ::testing::ElementsAre;
  EXPECT_THAT(split("Hello world's 12345!!\n\n  x"),
              ElementsAre("Hello", " world", "'s", " ", "12", "34", "5", "!!\n\n", " ", " x"));
  EXPECT_THAT(split("a  \n b"), ElementsAre("a", "  \n", " b"));
  EXPECT_THAT(split("x   "), ElementsAre("x", "   "));
  EXPECT_THAT(split(""), ElementsAre());
}

// Every byte lands in exactly one chunk, in order, for arbitrary bytes.
TEST(Pretokenizer, ChunksConcatenateToTheInput) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    std::string joined;
    for (auto chunk : pretokenize(text)) {
      ASSERT_FALSE(chunk.empty());
      joined += chunk;
    }
    ASSERT_EQ(joined, text);
  }
}

TEST(Pretokenizer, CountsCodePointsLikeSurrogateEscape) {
  EXPECT_EQ(count_code_points("abc"), 3u);
  EXPECT_EQ(count_code_points("\xc3\xa9t\xc3\xa9"), 3u);           // été
  EXPECT_EQ(count_code_points("\xf0\x9f\x98\x80"), 1u);             // an emoji
  EXPECT_EQ(count_code_points("\xe2\x82"), 2u);                     // truncated: two invalid bytes
  EXPECT_EQ(count_code_points("\xed\xa0\x80"), 3u);                 // an encoded surrogate is invalid
  EXPECT_EQ(prefix_of_code_points("\xc3\xa9t\xc3\xa9", 2), "\xc3\xa9t");
  EXPECT_EQ(prefix_of_code_points("ab", 5), "ab");
}

}  // namespace
}  // namespace ct
