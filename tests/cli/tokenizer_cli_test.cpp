// `clocktrain tokenizer train | encode | decode | info` end to end, on a slice of the shipped corpus.
#include <gmock/gmock.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "test_support.h"
#include "util/files.h"

namespace ct {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class TokenizerCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    if (!fs::is_directory(test::data_dir() / "corpus")) return;
    train_result_ = test::run_command(train_command(dir_->path() / "tok", 2));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!fs::is_directory(test::data_dir() / "corpus")) GTEST_SKIP() << "no corpus under " << test::data_dir();
    ASSERT_EQ(train_result_.exit_code, 0) << train_result_.output;
  }
  static std::string train_command(const fs::path& out, int threads) {
    return test::clocktrain_bin() + " tokenizer train --data " + quote(test::data_dir().string()) + " --out " +
           quote(out.string()) + " --vocab-size 1000 --max-chars 300000 --doc-cap 60000 --threads " +
           std::to_string(threads);
  }
  static fs::path tok() { return dir_->path() / "tok"; }
  static std::string bin() { return test::clocktrain_bin() + " tokenizer "; }

  static test::TempDir* dir_;
  static test::CommandResult train_result_;
};
test::TempDir* TokenizerCli::dir_ = nullptr;
test::CommandResult TokenizerCli::train_result_{-1, ""};

std::string sha_line(const std::string& output) {
  auto at = output.find("sha256");
  return at == std::string::npos ? "" : output.substr(at, output.find('\n', at) - at);
}

TEST_F(TokenizerCli, TrainWritesBothFilesAndReportsTheRun) {
  EXPECT_TRUE(fs::exists(tok() / "tokenizer.tiktoken"));
  EXPECT_TRUE(fs::exists(tok() / "tokenizer_clocktrain.json"));
  EXPECT_THAT(train_result_.output, HasSubstr("vocab size     1000"));
  EXPECT_THAT(train_result_.output, HasSubstr("300000 chars"));
  // The same tokenizer with one thread.
  auto again = test::run_command(train_command(dir_->path() / "tok1", 1));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(sha_line(again.output), sha_line(train_result_.output));
  EXPECT_FALSE(sha_line(again.output).empty());
}

TEST_F(TokenizerCli, EncodeThenDecodeGivesTheTextBack) {
  auto enc = test::run_command(bin() + "encode --tokenizer " + quote(tok().string()) + " " + quote("Hello, world! It's 2024."));
  ASSERT_EQ(enc.exit_code, 0) << enc.output;
  EXPECT_LT(std::count(enc.output.begin(), enc.output.end(), ' '), 20);
  auto dec = test::run_command(bin() + "decode --tokenizer " + quote(tok().string()) + " " + enc.output);
  ASSERT_EQ(dec.exit_code, 0) << dec.output;
  EXPECT_EQ(dec.output, "Hello, world! It's 2024.");  // the bytes exactly: no newline added
  // --bos puts <|bos|> (id 999, after 999 ranks) first.
  auto bos = test::run_command(bin() + "encode --bos --tokenizer " + quote(tok().string()) + " hi");
  EXPECT_EQ(bos.output.substr(0, 4), "999 ");
}

TEST_F(TokenizerCli, EncodeFileRoundTripsArbitraryBytes) {
  std::string bytes;
  for (int i = 0; i < 3000; ++i) bytes += static_cast<char>((i * 7919) % 256);
  const fs::path file = dir_->path() / "bytes.bin";
  std::ofstream(file, std::ios::binary) << bytes;
  auto enc = test::run_command(bin() + "encode --tokenizer " + quote(tok().string()) + " --file " + quote(file.string()));
  ASSERT_EQ(enc.exit_code, 0);
  auto dec = test::run_command(bin() + "decode --tokenizer " + quote(tok().string()) + " " + enc.output);
  ASSERT_EQ(dec.exit_code, 0);
  EXPECT_EQ(dec.output, bytes);
}

// encode | decode through standard input and files gives a file back byte for byte: decode reads ids
// from a file or stdin and adds no newline, and `encode --file -` reads stdin.
TEST_F(TokenizerCli, EncodeAndDecodeRoundTripAFileThroughStdinAndFiles) {
  std::string bytes = "First line, caf\xC3\xA9.\n\n  indented\tand tabbed\r\nno newline at the end";
  for (int i = 0; i < 500; ++i) bytes += static_cast<char>((i * 131) % 256);
  const fs::path file = dir_->path() / "pipe.bin";
  std::ofstream(file, std::ios::binary) << bytes;
  const std::string t = " --tokenizer " + quote(tok().string());
  auto piped = test::run_command(bin() + "encode" + t + " --file - < " + quote(file.string()) + " | " + bin() +
                                 "decode" + t + " --file -");
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_EQ(piped.output, bytes);
  // The ids in a file, as encode prints them (one line, a newline at the end).
  const fs::path ids = dir_->path() / "ids.txt";
  auto enc = test::run_command(bin() + "encode" + t + " --file " + quote(file.string()) + " > " + quote(ids.string()));
  ASSERT_EQ(enc.exit_code, 0) << enc.output;
  auto from_file = test::run_command(bin() + "decode" + t + " --file " + quote(ids.string()));
  ASSERT_EQ(from_file.exit_code, 0) << from_file.output;
  EXPECT_EQ(from_file.output, bytes);
  // Ids over several lines and with commas are read alike.
  auto lines = test::run_command("printf '72,101\\n108 108\\n111\\n' | " + bin() + "decode" + t + " --file -");
  ASSERT_EQ(lines.exit_code, 0) << lines.output;
  EXPECT_EQ(lines.output, "Hello");
  // Ids from both places, or from neither, are refused.
  auto both = test::run_command(bin() + "decode" + t + " --file " + quote(ids.string()) + " 72");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.output, HasSubstr("tokenizer decode: give either IDS or --file F"));
  auto neither = test::run_command(bin() + "decode" + t);
  EXPECT_EQ(neither.exit_code, 1);
  EXPECT_THAT(neither.output, HasSubstr("tokenizer decode: give either IDS or --file F"));
  auto missing = test::run_command(bin() + "decode" + t + " --file " + quote((dir_->path() / "absent").string()));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr((dir_->path() / "absent").string()));
}

TEST_F(TokenizerCli, InfoDescribesTheTokenizer) {
  auto info = test::run_command(bin() + "info --tokenizer " + quote(tok().string()));
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_THAT(info.output, HasSubstr("vocab size      1000 (256 bytes + 743 merges + 1 special tokens)"));
  EXPECT_THAT(info.output, HasSubstr("special         999 <|bos|>"));
  EXPECT_THAT(info.output, HasSubstr("first merges"));
  EXPECT_EQ(sha_line(info.output).substr(sha_line(info.output).size() - 64),
            sha_line(train_result_.output).substr(sha_line(train_result_.output).size() - 64));
}

// Token ids of corpus prose agree with the independent Python reader (tiktoken when importable).
TEST_F(TokenizerCli, PythonReaderAgreesOnProse) {
  CT_NEED_PYTHON_MODULES("regex", "python3-regex is not importable");
  // The prose excerpts stored with the pre-tokenizer golden vectors, decoded by python.
  const fs::path texts = dir_->path() / "prose.json";
  const auto golden = test::source_dir() / "tests/golden/pretokenize.jsonl";
  auto extract = test::run_command(
      test::python() + " -c " +
      quote("import json,base64,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; "
            "json.dump([base64.b64decode(r['input_b64']).decode() for r in rows if r['name'].startswith('corpus/')], "
            "open(sys.argv[2],'w'))") +
      " " + quote(golden.string()) + " " + quote(texts.string()));
  ASSERT_EQ(extract.exit_code, 0) << extract.output;
  auto py = test::run_command(test::python() + " " + quote((test::source_dir() / "tests/python/bpe_reference.py").string()) +
                              " " + quote(tok().string()) + " " + quote(texts.string()));
  ASSERT_EQ(py.exit_code, 0) << py.output;
  // Compare each excerpt with the CLI's ids.
  auto split = test::run_command(test::python() + " -c " +
                                 quote("import json,sys; [open(sys.argv[2]+str(i),'w').write(t) for i,t in "
                                       "enumerate(json.load(open(sys.argv[1])))]") +
                                 " " + quote(texts.string()) + " " + quote((dir_->path() / "prose_").string()));
  ASSERT_EQ(split.exit_code, 0) << split.output;
  // stderr (one line naming the implementation) comes first; the JSON follows.
  std::string expected = py.output.substr(std::min(py.output.find('['), py.output.size()));
  std::string ours = "[";
  for (int i = 0; fs::exists(dir_->path() / ("prose_" + std::to_string(i))); ++i) {
    auto enc = test::run_command(bin() + "encode --tokenizer " + quote(tok().string()) + " --file " +
                                 quote((dir_->path() / ("prose_" + std::to_string(i))).string()));
    ASSERT_EQ(enc.exit_code, 0) << enc.output;
    std::string ids = enc.output.substr(0, enc.output.find('\n'));
    std::replace(ids.begin(), ids.end(), ' ', ',');
    ours += std::string(i ? ", " : "") + "[" + ids + "]";
  }
  ours += "]";
  auto normalise = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
    s.erase(std::remove(s.begin(), s.end(), '\n'), s.end());
    return s;
  };
  EXPECT_GT(ours.size(), 1000u);
  EXPECT_EQ(normalise(ours), normalise(expected));
}

TEST_F(TokenizerCli, ErrorsNameTheProblem) {
  auto missing = test::run_command(bin() + "encode --tokenizer /nonexistent/tok hi");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.output, HasSubstr("/nonexistent/tok"));
  auto bad_id = test::run_command(bin() + "decode --tokenizer " + quote(tok().string()) + " 5 100000");
  EXPECT_NE(bad_id.exit_code, 0);
  EXPECT_THAT(bad_id.output, HasSubstr("id 100000 at position 1 is outside the vocabulary"));
  auto not_number = test::run_command(bin() + "decode --tokenizer " + quote(tok().string()) + " 5 x7");
  EXPECT_NE(not_number.exit_code, 0);
  EXPECT_THAT(not_number.output, HasSubstr("'x7' is not a token id"));
  const fs::path empty = dir_->path() / "empty_data";
  fs::create_directories(empty / "corpus");
  auto no_corpus = test::run_command(bin() + "train --data " + quote(empty.string()) + " --out " +
                                     quote((dir_->path() / "never").string()));
  EXPECT_NE(no_corpus.exit_code, 0);
  EXPECT_THAT(no_corpus.output, HasSubstr("no *.jsonl.zst or *.jsonl files"));
  EXPECT_FALSE(fs::exists(dir_->path() / "never"));
}

}  // namespace
}  // namespace ct

namespace ct {
namespace {

// A number beyond double in a corpus line made nlohmann::json throw out_of_range (not parse_error)
// inside the OpenMP loop that parses lines, which terminated the process. It is an error naming the
// file and line, and nothing is written.
TEST(TokenizerTrainInput, NumberBeyondDoubleInACorpusLineIsNamed) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "data/corpus");
  write_file_atomic(dir.path() / "data/corpus/train_000.jsonl",
                    "{\"text\": \"hello world\"}\n{\"text\": \"x\", \"score\": 1e999}\n");
  auto result = test::run_command(test::clocktrain_bin() + " tokenizer train --data " +
                                  quote((dir.path() / "data").string()) + " --out " +
                                  quote((dir.path() / "tok").string()) + " --vocab-size 300");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("train_000.jsonl:2: invalid JSON"));
  EXPECT_FALSE(fs::exists(dir.path() / "tok"));
}

}  // namespace
}  // namespace ct
