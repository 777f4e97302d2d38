// `clocktrain data prepare` end to end with a real (tiny) tokenizer: same bytes for 1 and 2
// threads, <|bos|> + the tokenizer's encoding for every document in corpus order, validation
// documents kept out of training, a bad input failing with file and line while the previous
// outputs stay, and the tokenizer trained on the spot when none is given.
#include <map>

#include "data/corpus_reader.h"
#include "data/manifest.h"
#include "data/tokenizer_training.h"
#include "data_test_support.h"
#include "text/bpe_trainer.h"
#include "text/tokenizer.h"

namespace ct {
namespace {

using test::TempDir;

std::string sentence(int seed) {
  static const char* words[] = {"the",   "river", "ran",    "quietly", "under", "old",   "stone", "bridges",
                                "while", "birds", "sang",   "of",      "summer", "rain", "and",   "distant",
                                "hills", "where", "nobody", "walked",  "since", "1846", "café",  "naïve"};
  std::string out;
  for (int i = 0; i < 12; ++i) {
    if (i) out += ' ';
    out += words[(seed * 7 + i * 13 + i * i) % 24];
  }
  return out + ".";
}

struct CliData {
  std::vector<std::string> corpus, val;
  explicit CliData(const fs::path& root) {
    std::vector<std::pair<std::string, std::string>> a, b, v;
    for (int i = 0; i < 30; ++i) {
      std::string text;
      for (int k = 0; k <= i % 5; ++k) text += sentence(i * 5 + k) + (k % 2 ? "\n\n" : " ");
      corpus.push_back(text);
      (i < 18 ? a : b).push_back({std::to_string(i), text});
    }
    for (int i = 0; i < 3; ++i) {
      val.push_back("ZQXJ validation " + sentence(1000 + i));
      v.push_back({"v" + std::to_string(i), val.back()});
    }
    test::write_jsonl(root / "corpus" / "part_000.jsonl.zst", a);
    test::write_jsonl(root / "corpus" / "part_001.jsonl", b);
    test::write_jsonl(root / "val" / "val_000.jsonl.zst", v);
  }
};

Tokenizer tiny_tokenizer(const fs::path& data) {
  BpeTrainerOptions options;
  options.vocab_size = 300;
  return train_tokenizer_on_corpus(list_corpus_files(data / "corpus"), options);
}

std::string prepare_command(const fs::path& data, const fs::path& out, const std::string& extra) {
  return test::clocktrain_bin() + " data prepare --data " + data.string() + " --out " + out.string() +
         " --shard-tokens 400 --heldout-tokens 150 " + extra;
}

std::vector<fs::path> split_paths(const Manifest& m, const fs::path& dir, const std::string& split) {
  std::vector<fs::path> out;
  for (const auto& s : m.shards_of(split)) out.push_back(dir / s.name);
  return out;
}

TEST(PrepareCli, DeterministicAndEveryDocumentIsBosPlusItsEncoding) {
  TempDir dir;
  CliData data(dir / "data");
  Tokenizer tokenizer = tiny_tokenizer(dir / "data");
  tokenizer.save(dir / "tok");
  auto one = test::run_command(prepare_command(dir / "data", dir / "one", "--tokenizer " + (dir / "tok").string() +
                                                                              " --threads 1"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto two = test::run_command(prepare_command(dir / "data", dir / "two", "--tokenizer " + (dir / "tok").string() +
                                                                              " --threads 2"));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(one.output.find("manifest"), std::string::npos) << one.output;
  EXPECT_EQ(test::snapshot(dir / "one"), test::snapshot(dir / "two"));

  Manifest m = load_manifest(dir / "one");
  EXPECT_EQ(m.tokenizer_sha256, tokenizer.sha256());
  EXPECT_EQ(m.vocab_size, 300);
  EXPECT_EQ(m.bos_id, tokenizer.bos_id());
  EXPECT_EQ(Tokenizer::load(dir / "one" / "tokenizer").sha256(), tokenizer.sha256());  // carried along

  // Train and heldout together are, in corpus order, <|bos|> + encode(text) of every document.
  auto train = test::read_tokens(split_paths(m, dir / "one", "train"));
  auto heldout = test::read_tokens(split_paths(m, dir / "one", "heldout"));
  ASSERT_FALSE(heldout.empty());
  size_t t = 0, h = 0;
  for (const auto& text : data.corpus) {
    std::vector<int32_t> expected = {tokenizer.bos_id()};
    tokenizer.encode_append(text, expected);
    auto matches = [&](const std::vector<int32_t>& stream, size_t at) {
      return at + expected.size() <= stream.size() &&
             std::equal(expected.begin(), expected.end(), stream.begin() + static_cast<std::ptrdiff_t>(at)) &&
             (at + expected.size() == stream.size() || stream[at + expected.size()] == tokenizer.bos_id());
    };
    if (matches(heldout, h)) {
      h += expected.size();
    } else {
      ASSERT_TRUE(matches(train, t)) << "document not found in order: " << text;
      t += expected.size();
    }
  }
  EXPECT_EQ(t, train.size());
  EXPECT_EQ(h, heldout.size());
  // The validation documents are in val shards only.
  std::string training_text = tokenizer.decode(train) + tokenizer.decode(heldout);
  EXPECT_EQ(training_text.find("ZQXJ"), std::string::npos);
  std::string val_text = tokenizer.decode(test::read_tokens(split_paths(m, dir / "one", "val")));
  for (const auto& v : data.val) EXPECT_NE(val_text.find(v), std::string::npos) << v;
}

TEST(PrepareCli, BadInputFailsNamingFileAndLineAndKeepsOutputs) {
  TempDir dir;
  CliData data(dir / "data");
  tiny_tokenizer(dir / "data").save(dir / "tok");
  const std::string tok = "--tokenizer " + (dir / "tok").string();
  ASSERT_EQ(test::run_command(prepare_command(dir / "data", dir / "out", tok)).exit_code, 0);
  auto before = test::snapshot(dir / "out");
  write_file_atomic(dir / "data" / "corpus" / "part_002.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"broken\n");
  auto result = test::run_command(prepare_command(dir / "data", dir / "out", tok));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("part_002.jsonl:2: invalid JSON"), std::string::npos) << result.output;
  EXPECT_EQ(test::snapshot(dir / "out"), before);
}

TEST(PrepareCli, TrainsTheTokenizerWhenNoneIsGiven) {
  TempDir dir;
  CliData data(dir / "data");
  auto result = test::run_command(prepare_command(dir / "data", dir / "out", "--vocab-size 300"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("training one (vocab 300)"), std::string::npos) << result.output;
  // The same tokenizer as `clocktrain tokenizer train` makes with the same settings.
  auto trained = test::run_command(test::clocktrain_bin() + " tokenizer train --data " + (dir / "data").string() +
                                   " --out " + (dir / "tok").string() + " --vocab-size 300");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_EQ(Tokenizer::load(dir / "out" / "tokenizer").sha256(), Tokenizer::load(dir / "tok").sha256());
  EXPECT_EQ(load_manifest(dir / "out").tokenizer_sha256, Tokenizer::load(dir / "tok").sha256());
  // A second run reuses OUT/tokenizer.
  result = test::run_command(prepare_command(dir / "data", dir / "out", ""));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.find("training one"), std::string::npos) << result.output;
}

// `tokenizer train` and `data prepare` read a corpus folder through one reader (data/corpus_documents.h),
// so every format counts for both: .txt files (one document each), .jsonl.gz, .jsonl and .jsonl.zst.
// (`tokenizer train` used to list only *.jsonl and *.jsonl.zst and skip the rest.)
TEST(PrepareCli, TokenizerTrainAndDataPrepareReadTheSameDocumentsInEveryFormat) {
  TempDir dir;
  const fs::path data = dir / "data";
  std::vector<std::pair<std::string, std::string>> a, b, c;
  for (int i = 0; i < 24; ++i) (i < 8 ? a : i < 16 ? b : c).push_back({std::to_string(i), sentence(i)});
  test::write_jsonl(data / "corpus" / "part_000.jsonl.gz", a);
  test::write_jsonl(data / "corpus" / "part_001.jsonl", b);
  test::write_jsonl(data / "corpus" / "part_002.jsonl.zst", c);
  write_file_atomic(data / "corpus" / "part_003.txt", sentence(100) + "\n" + sentence(101) + "\n");
  write_file_atomic(data / "corpus" / "part_004.txt", sentence(102));
  test::write_jsonl(data / "val" / "val_000.jsonl", {{"v0", "ZQXJ validation " + sentence(1000)}});
  const int64_t documents = 24 + 2;

  auto trained = test::run_command(test::clocktrain_bin() + " tokenizer train --data " + data.string() + " --out " +
                                   (dir / "tok").string() + " --vocab-size 300");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("documents      " + std::to_string(documents) + " ("), std::string::npos)
      << trained.output;
  auto prepared = test::run_command(prepare_command(data, dir / "out", "--vocab-size 300"));
  ASSERT_EQ(prepared.exit_code, 0) << prepared.output;
  EXPECT_EQ(Tokenizer::load(dir / "out" / "tokenizer").sha256(), Tokenizer::load(dir / "tok").sha256());
  const Manifest manifest = load_manifest(dir / "out");
  EXPECT_EQ(manifest.documents_of("train") + manifest.documents_of("heldout"), documents);
  // The same documents, in the same order, as the library's own training on the listed files.
  EXPECT_EQ(Tokenizer::load(dir / "tok").sha256(), tiny_tokenizer(data).sha256());
}

}  // namespace
}  // namespace ct
