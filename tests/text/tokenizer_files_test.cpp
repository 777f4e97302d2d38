// The tokenizer folder: save/load round trips, parity with an independent Python reader (tiktoken
// when importable), and clear errors for damaged files.
#include <gmock/gmock.h>

#include <random>

#include "test_support.h"
#include "text/base64.h"
#include "text/small_tokenizer.h"
#include "text/synthetic_text.h"
#include "text/tokenizer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"

namespace ct {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

// The message of the ct::Error that loading `dir` throws ("" if it loads).
std::string load_error(const fs::path& dir) {
  try {
    Tokenizer::load(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class TokenizerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    test::small_tokenizer().save(dir_.path() / "good");
    tiktoken_ = read_file(dir_.path() / "good/tokenizer.tiktoken");
    json_ = read_file(dir_.path() / "good" / kTokenizerJsonFile);
  }
  // A copy of the good folder with one file replaced.
  fs::path variant(const std::string& name, const std::string* tiktoken, const std::string* json) {
    fs::path d = dir_.path() / name;
    fs::create_directories(d);
    write_file_atomic(d / "tokenizer.tiktoken", tiktoken ? *tiktoken : tiktoken_);
    write_file_atomic(d / kTokenizerJsonFile, json ? *json : json_);
    return d;
  }
  fs::path with_tiktoken_lines(const std::string& name, const std::vector<std::string>& lines) {
    std::string text = join_lines(lines);
    return variant(name, &text, nullptr);
  }
  fs::path with_json(const std::string& name, const std::string& json) { return variant(name, nullptr, &json); }

  test::TempDir dir_;
  std::string tiktoken_, json_;
};

TEST_F(TokenizerFiles, SaveThenLoadGivesTheSameTokenizer) {
  const Tokenizer& original = test::small_tokenizer();
  const Tokenizer loaded = Tokenizer::load(dir_.path() / "good");
  EXPECT_EQ(loaded.sha256(), original.sha256());
  EXPECT_EQ(loaded.vocab_size(), original.vocab_size());
  EXPECT_EQ(loaded.token_bytes(), original.token_bytes());
  std::mt19937 rng(8);
  for (int i = 0; i < 200; ++i) {
    const std::string text = test::synthetic_document(rng, 200);
    ASSERT_EQ(loaded.encode(text), original.encode(text));
  }
  // The files are what docs/formats.md describes.
  const auto lines = lines_of(tiktoken_);
  ASSERT_EQ(lines.size(), 1022u);
  EXPECT_EQ(lines[0], "AA== 0");
  EXPECT_EQ(lines[65], base64_encode("A") + " 65");
  const Json j = Json::parse(json_);
  EXPECT_EQ(j["vocab_size"], 1024);
  EXPECT_EQ(j["special_tokens"]["<|bos|>"], 1022);
  EXPECT_EQ(j["special_tokens"]["<|end|>"], 1023);
  // Saving again over the folder leaves exactly the two files.
  loaded.save(dir_.path() / "good");
  int files = 0;
  for (auto& e : fs::directory_iterator(dir_.path() / "good")) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
  EXPECT_EQ(read_file(dir_.path() / "good/tokenizer.tiktoken"), tiktoken_);
}

TEST_F(TokenizerFiles, Sha256IgnoresJsonFormatting) {
  Json j = Json::parse(json_);
  const fs::path d = with_json("reformatted", j.dump() + "\n\n");
  EXPECT_EQ(Tokenizer::load(d).sha256(), test::small_tokenizer().sha256());
  EXPECT_EQ(test::small_tokenizer().sha256().size(), 64u);
}

TEST_F(TokenizerFiles, PythonReaderGivesTheSameIds) {
  CT_NEED_PYTHON_MODULES("regex", "python3-regex is not importable");
  std::mt19937 rng(21);
  std::vector<std::string> texts;
  for (int i = 0; i < 150; ++i) texts.push_back(test::synthetic_document(rng, rng() % 400));
  for (int i = 0; i < 100; ++i) texts.push_back(test::random_unicode(rng, 50));
  texts.push_back("It's 'LL 'Ve DON'T\r\n\r\n  tabs\t\tand   spaces   \n" + std::string(150, '!'));
  texts.push_back(std::string(300, 'a') + " " + std::string(200, ' ') + "x");
  const fs::path texts_path = dir_.path() / "texts.json";
  write_file_atomic(texts_path, Json(texts).dump());
  const auto script = test::source_dir() / "tests/python/bpe_reference.py";
  const auto result = test::run_command(test::python() + " " + script.string() + " " +
                                        (dir_.path() / "good").string() + " " + texts_path.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // The first line on stderr names the implementation; the JSON follows.
  const size_t json_start = result.output.find('[');
  ASSERT_NE(json_start, std::string::npos) << result.output;
  std::cout << result.output.substr(0, json_start);
  const auto python_ids = Json::parse(result.output.substr(json_start)).get<std::vector<std::vector<int32_t>>>();
  ASSERT_EQ(python_ids.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(test::small_tokenizer().encode(texts[i]), python_ids[i]) << "text " << i << ": " << texts[i];
}

TEST_F(TokenizerFiles, BadTiktokenLinesAreNamed) {
  auto lines = lines_of(tiktoken_);
  {
    auto bad = lines;
    bad[299] = "QUJ@ 299";
    EXPECT_THAT(load_error(with_tiktoken_lines("b64", bad)),
                AllOf(HasSubstr("tokenizer.tiktoken:300"), HasSubstr("invalid base64")));
  }
  {
    auto bad = lines;
    bad[400] = bad[400].substr(0, bad[400].find(' '));
    EXPECT_THAT(load_error(with_tiktoken_lines("norank", bad)),
                AllOf(HasSubstr("tokenizer.tiktoken:401"), HasSubstr("expected '<base64 token bytes> <rank>'")));
    bad[400] += " ";
    EXPECT_THAT(load_error(with_tiktoken_lines("norank2", bad)),
                AllOf(HasSubstr("tokenizer.tiktoken:401"), HasSubstr("missing rank")));
    bad[400] += "x7";
    EXPECT_THAT(load_error(with_tiktoken_lines("badrank", bad)),
                AllOf(HasSubstr("tokenizer.tiktoken:401"), HasSubstr("non-negative integer")));
  }
  {
    auto bad = lines;
    bad[501] = bad[501].substr(0, bad[501].find(' ')) + " 500";
    EXPECT_THAT(load_error(with_tiktoken_lines("duprank", bad)),
                AllOf(HasSubstr("tokenizer.tiktoken:502"), HasSubstr("rank 500 appears twice")));
  }
  {
    auto bad = lines;
    bad.erase(bad.begin() + 600);
    EXPECT_THAT(load_error(with_tiktoken_lines("gap", bad)),
                AllOf(HasSubstr("tokenizer.tiktoken:601"), HasSubstr("rank 601 leaves a gap: expected rank 600")));
  }
  {
    auto bad = lines;
    bad[700] = bad[300].substr(0, bad[300].find(' ')) + " 700";
    EXPECT_THAT(load_error(with_tiktoken_lines("dupbytes", bad)),
                AllOf(HasSubstr("tokenizer.tiktoken"), HasSubstr("rank 700: the same bytes as rank 300")));
  }
}

TEST_F(TokenizerFiles, MissingByteTokensAreRefused) {
  // Ranks 0..254 only: byte 255 cannot be encoded.
  std::vector<std::string> lines;
  for (int b = 0; b < 255; ++b) lines.push_back(base64_encode(std::string(1, static_cast<char>(b))) + " " + std::to_string(b));
  Json j = Json::parse(json_);
  j["vocab_size"] = 256;
  j["mergeable_ranks"] = 255;
  j["special_tokens"] = {{"<|bos|>", 255}};
  std::string tiktoken = join_lines(lines), json = j.dump();
  EXPECT_THAT(load_error(variant("bytes", &tiktoken, &json)), HasSubstr("no token for the single byte 255"));
}

// A hostile file with one very long token: loading tried every split of every token, hashing both
// halves, O(length^2) per token (a 1 MiB token took about half an hour). Only splits into halves of
// existing token lengths are tried now; without that this test runs into ctest's timeout.
TEST_F(TokenizerFiles, OneHugeTokenLoadsQuickly) {
  std::vector<std::string> lines;
  for (int b = 0; b < 256; ++b) lines.push_back(base64_encode(std::string(1, static_cast<char>(b))) + " " + std::to_string(b));
  lines.push_back(base64_encode(std::string(size_t{1} << 20, 'a')) + " 256");
  lines.push_back(base64_encode("ab") + " 257");
  Json j = Json::parse(json_);
  j["vocab_size"] = 259;
  j["mergeable_ranks"] = 258;
  j["special_tokens"] = {{"<|bos|>", 258}};
  const Tokenizer tokenizer = Tokenizer::from_file_contents(join_lines(lines), j.dump(), "huge.tiktoken", "huge.json");
  EXPECT_EQ(tokenizer.vocab_size(), 259);
  EXPECT_EQ(tokenizer.encode("ab"), std::vector<int32_t>{257});
  EXPECT_EQ(tokenizer.token_bytes_of(256).size(), size_t{1} << 20);
}

TEST_F(TokenizerFiles, BadJsonIsNamed) {
  Json j = Json::parse(json_);
  EXPECT_THAT(load_error(with_json("syntax", "{\"pattern\": ")), AllOf(HasSubstr("tokenizer_clocktrain.json"), HasSubstr("invalid JSON")));
  {
    Json bad = j;
    bad["pattern"] = "\\w+";
    EXPECT_THAT(load_error(with_json("pattern", bad.dump())),
                AllOf(HasSubstr("tokenizer_clocktrain.json"), HasSubstr("field 'pattern'")));
  }
  {
    Json bad = j;
    bad["special_tokens"]["<|end|>"] = 5000;
    EXPECT_THAT(load_error(with_json("special", bad.dump())),
                AllOf(HasSubstr("tokenizer_clocktrain.json"), HasSubstr("'<|end|>': id 5000 is not in [1022, 1024)")));
  }
  {
    Json bad = j;
    bad["special_tokens"] = {{"<|end|>", 1022}, {"<|bos|>", 1023}};
    EXPECT_THAT(load_error(with_json("bosfirst", bad.dump())), HasSubstr("must be <|bos|>"));
  }
  {
    Json bad = j;
    bad["vocab_size"] = 1000;
    EXPECT_THAT(load_error(with_json("vocab", bad.dump())), AllOf(HasSubstr("field 'vocab_size'"), HasSubstr("1022 ranks")));
  }
  {
    Json bad = j;
    bad["version"] = 2;
    EXPECT_THAT(load_error(with_json("version", bad.dump())), HasSubstr("field 'version': expected 1"));
  }
  {
    Json bad = j;
    bad.erase("vocab_size");
    EXPECT_THAT(load_error(with_json("novocab", bad.dump())), HasSubstr("vocab_size"));
  }
}

TEST_F(TokenizerFiles, MissingFilesAreNamed) {
  fs::path d = dir_.path() / "half";
  fs::create_directories(d);
  write_file_atomic(d / "tokenizer.tiktoken", tiktoken_);
  EXPECT_THAT(load_error(d), AllOf(HasSubstr("tokenizer_clocktrain.json"), HasSubstr("missing")));
  EXPECT_THAT(load_error(dir_.path() / "nowhere"), HasSubstr("not a folder"));
}

TEST_F(TokenizerFiles, AFolderWithTheOldJsonNameStillLoadsAndANewSaveUsesTheNewName) {
  // Not tokenizer.json: Hugging Face tokenizers' file of that name is another format.
  EXPECT_FALSE(fs::exists(dir_.path() / "good" / "tokenizer.json"));
  const fs::path old = dir_.path() / "old";
  fs::create_directories(old);
  write_file_atomic(old / "tokenizer.tiktoken", tiktoken_);
  write_file_atomic(old / "tokenizer.json", json_);
  EXPECT_EQ(tokenizer_json_path(old), old / "tokenizer.json");
  EXPECT_EQ(Tokenizer::load(old).sha256(), Tokenizer::load(dir_.path() / "good").sha256());
  // An error in it names the old file.
  write_file_atomic(old / "tokenizer.json", "{");
  EXPECT_THAT(load_error(old), HasSubstr("old/tokenizer.json"));
  // Where both are present the new name is read.
  write_file_atomic(old / kTokenizerJsonFile, json_);
  EXPECT_EQ(tokenizer_json_path(old), old / kTokenizerJsonFile);
  EXPECT_NO_THROW(Tokenizer::load(old));
}

TEST(Base64, RoundTripsAndRejectsNonCanonicalText) {
  std::mt19937 rng(4);
  for (int i = 0; i < 500; ++i) {
    std::string s = test::random_bytes(rng, 40);
    auto decoded = base64_decode(base64_encode(s));
    ASSERT_TRUE(decoded.has_value());
    ASSERT_EQ(*decoded, s);
  }
  EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
  EXPECT_FALSE(base64_decode("aGVsbG8").has_value());   // length not a multiple of 4
  EXPECT_FALSE(base64_decode("aGVs=G8=").has_value());  // padding inside
  EXPECT_FALSE(base64_decode("aGVsbG9=").has_value());  // non-zero padding bits
  EXPECT_FALSE(base64_decode("aGV!bG8=").has_value());
}

}  // namespace
}  // namespace ct
