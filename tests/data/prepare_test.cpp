// Data preparation on a tiny corpus with a byte-level stand-in encoder: identical bytes whatever the
// thread count, <|bos|> before every document, the held-out slice and the validation documents kept
// out of training, and outputs untouched when preparation fails.
#include "data/prepare.h"

#include <map>
#include <set>

#include "data/shard.h"
#include "data_test_support.h"
#include "util/error.h"
#include "util/sha256.h"

namespace ct {
namespace {

using test::TempDir;

// A tiny data folder: three corpus files in three formats, and a val folder.
struct TinyData {
  std::vector<std::string> corpus_texts, val_texts;
  explicit TinyData(const fs::path& root) {
    std::vector<std::pair<std::string, std::string>> files[3];
    for (int i = 0; i < 40; ++i) {
      std::string text = "corpus document " + std::to_string(i) + ": " + std::string(20 + (i * 37) % 150, 'a' + i % 26);
      corpus_texts.push_back(text);
      files[i * 3 / 40].push_back({"c" + std::to_string(i), text});
    }
    test::write_jsonl(root / "corpus" / "train_000.jsonl.zst", files[0]);
    test::write_jsonl(root / "corpus" / "train_001.jsonl.gz", files[1]);
    test::write_jsonl(root / "corpus" / "train_002.jsonl", files[2]);
    std::vector<std::pair<std::string, std::string>> val;
    for (int i = 0; i < 4; ++i) {
      val_texts.push_back("VALIDATION text " + std::to_string(i) + " that training must never see");
      val.push_back({"v" + std::to_string(i), val_texts.back()});
    }
    test::write_jsonl(root / "val" / "val_000.jsonl.zst", val);
  }
};

PrepareSettings tiny_settings(const fs::path& data, const fs::path& out, int threads) {
  PrepareSettings s;
  s.data_dir = data;
  s.out_dir = out;
  s.shard_tokens = 700;
  s.heldout_tokens = 400;
  s.threads = threads;
  s.progress = false;
  s.batch_bytes = 1500;  // several batches even for this tiny corpus
  return s;
}

std::vector<fs::path> shard_paths(const Manifest& m, const fs::path& dir, const std::string& split) {
  std::vector<fs::path> out;
  for (const auto& s : m.shards_of(split)) out.push_back(dir / s.name);
  return out;
}

TEST(Prepare, SameBytesWithOneAndTwoThreads) {
  TempDir dir;
  TinyData data(dir / "data");
  test::ByteEncoder encoder;
  auto one = prepare_data(tiny_settings(dir / "data", dir / "one", 1), encoder);
  auto two = prepare_data(tiny_settings(dir / "data", dir / "two", 2), encoder);
  EXPECT_EQ(one.threads, 1);
  EXPECT_EQ(two.threads, 2);
  auto a = test::snapshot(dir / "one"), b = test::snapshot(dir / "two");
  EXPECT_EQ(a, b);
  EXPECT_GT(one.manifest.shards_of("train").size(), 2u);  // several shards were cut
  EXPECT_EQ(one.manifest_sha256, two.manifest_sha256);
  EXPECT_EQ(one.manifest_sha256, manifest_file_sha256(dir / "one"));
}

TEST(Prepare, EveryDocumentOnceWithBosAndValKeptApart) {
  TempDir dir;
  TinyData data(dir / "data");
  test::ByteEncoder encoder;
  auto report = prepare_data(tiny_settings(dir / "data", dir / "out", 2), encoder);
  const Manifest& m = report.manifest;
  EXPECT_EQ(m.bos_id, 256);
  EXPECT_EQ(m.vocab_size, 257);
  EXPECT_EQ(m.tokenizer_sha256, encoder.sha256());

  bool starts_with_bos = false;
  auto train = test::split_documents(test::read_tokens(shard_paths(m, dir / "out", "train")), &starts_with_bos);
  EXPECT_TRUE(starts_with_bos);
  auto heldout = test::split_documents(test::read_tokens(shard_paths(m, dir / "out", "heldout")), &starts_with_bos);
  EXPECT_TRUE(starts_with_bos);
  auto val = test::split_documents(test::read_tokens(shard_paths(m, dir / "out", "val")), &starts_with_bos);
  EXPECT_TRUE(starts_with_bos);

  // Each split is a list of whole documents with a <|bos|> before each: decoding at the <|bos|>
  // ids gives back exactly the documents, train and heldout together being the corpus in order.
  EXPECT_EQ(val, data.val_texts);
  EXPECT_FALSE(heldout.empty());
  std::set<std::string> heldout_set(heldout.begin(), heldout.end());
  size_t t = 0, h = 0;
  for (const auto& text : data.corpus_texts) {
    if (h < heldout.size() && heldout[h] == text) {
      ++h;
    } else {
      ASSERT_LT(t, train.size());
      EXPECT_EQ(train[t], text);
      ++t;
    }
  }
  EXPECT_EQ(t, train.size());
  EXPECT_EQ(h, heldout.size());
  for (const auto& text : train) EXPECT_EQ(heldout_set.count(text), 0u);

  // No validation text anywhere in train or heldout, not even as a part of a document.
  std::string all_training;
  for (const auto& s : train) all_training += s;
  for (const auto& s : heldout) all_training += s;
  EXPECT_EQ(all_training.find("VALIDATION"), std::string::npos);

  // The held-out slice: at least the tokens asked for, and no more documents than needed.
  EXPECT_GE(m.tokens_of("heldout"), 400);
  int64_t without_last = m.tokens_of("heldout") - static_cast<int64_t>(heldout.back().size()) - 1;
  EXPECT_LT(without_last, 400);
  EXPECT_EQ(m.documents_of("train") + m.documents_of("heldout"), 40);
  EXPECT_EQ(m.documents_of("val"), 4);
  EXPECT_EQ(m.summary["documents"]["heldout"], static_cast<int64_t>(heldout.size()));

  // Manifest entries describe the files on disk.
  for (const auto& s : m.shards) {
    EXPECT_EQ(sha256_file(dir / "out" / s.name), s.sha256) << s.name;
    EXPECT_EQ(ShardFile::open(dir / "out" / s.name).token_count(), s.tokens) << s.name;
    EXPECT_EQ(fs::file_size(dir / "out" / s.name), s.bytes) << s.name;
  }
  EXPECT_EQ(m.sources.size(), 4u);
  EXPECT_EQ(m.sources[0].path, "corpus/train_000.jsonl.zst");
  EXPECT_EQ(m.sources[3].split, "val");
  EXPECT_EQ(m.sources[3].sha256, sha256_file(dir / "data" / "val" / "val_000.jsonl.zst"));
}

TEST(Prepare, CopyOfAValidationDocumentInTheCorpusIsLeftOut) {
  TempDir dir;
  TinyData data(dir / "data");
  test::write_jsonl(dir / "data" / "corpus" / "train_003.jsonl", {{"leak", data.val_texts[2]}, {"ok", "fine"}});
  test::ByteEncoder encoder;
  auto report = prepare_data(tiny_settings(dir / "data", dir / "out", 2), encoder);
  EXPECT_EQ(report.manifest.summary["val_copies_excluded"], 1);
  EXPECT_EQ(report.manifest.documents_of("train") + report.manifest.documents_of("heldout"), 41);
  auto train = test::split_documents(test::read_tokens(shard_paths(report.manifest, dir / "out", "train")));
  EXPECT_EQ(train.back(), "fine");
  for (const auto& text : train) EXPECT_NE(text, data.val_texts[2]);
}

TEST(Prepare, FailureLeavesExistingOutputsUntouched) {
  TempDir dir;
  TinyData data(dir / "data");
  test::ByteEncoder encoder;
  prepare_data(tiny_settings(dir / "data", dir / "out", 2), encoder);
  auto before = test::snapshot(dir / "out");
  // A bad line at the end of the last file: the failure comes after most shards were written.
  write_file_atomic(dir / "data" / "corpus" / "train_009.jsonl",
                    test::jsonl_line("x", std::string(3000, 'z')) + "{\"text\": 5}\n");
  auto settings = tiny_settings(dir / "data", dir / "out", 2);
  settings.shard_tokens = 300;  // a different layout, so any partial write would show
  try {
    prepare_data(settings, encoder);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train_009.jsonl:2: field \"text\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::snapshot(dir / "out"), before);  // same files, same bytes, no staging folder left
}

TEST(Prepare, StaleShardsOfAnEarlierRunAreRemoved) {
  TempDir dir;
  TinyData data(dir / "data");
  test::ByteEncoder encoder;
  auto settings = tiny_settings(dir / "data", dir / "out", 1);
  settings.shard_tokens = 200;
  auto many = prepare_data(settings, encoder);
  settings.shard_tokens = 100000;
  auto few = prepare_data(settings, encoder);
  ASSERT_GT(many.manifest.shards.size(), few.manifest.shards.size());
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(dir / "out")) on_disk.insert(e.path().filename().string());
  std::set<std::string> expected = {"manifest.json"};
  for (const auto& s : few.manifest.shards) expected.insert(s.name);
  EXPECT_EQ(on_disk, expected);
}

TEST(Prepare, TextFilesAndNoValFolder) {
  TempDir dir;
  fs::create_directories(dir / "data" / "corpus");
  write_file_atomic(dir / "data" / "corpus" / "b.txt", "bee");
  write_file_atomic(dir / "data" / "corpus" / "a.txt", "ay");
  test::ByteEncoder encoder;
  auto settings = tiny_settings(dir / "data", dir / "out", 2);
  settings.heldout_tokens = 0;
  auto report = prepare_data(settings, encoder);
  EXPECT_TRUE(report.manifest.shards_of("val").empty());
  EXPECT_TRUE(report.manifest.shards_of("heldout").empty());
  auto train = test::split_documents(test::read_tokens(shard_paths(report.manifest, dir / "out", "train")));
  EXPECT_EQ(train, (std::vector<std::string>{"ay", "bee"}));
}

TEST(Prepare, EmptyCorpusIsAnError) {
  TempDir dir;
  fs::create_directories(dir / "data" / "corpus");
  write_file_atomic(dir / "data" / "corpus" / "empty.jsonl", "\n\n");
  test::ByteEncoder encoder;
  try {
    prepare_data(tiny_settings(dir / "data", dir / "out", 1), encoder);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty corpus"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "manifest.json"));
}

TEST(Prepare, HeldoutStrideSpreadsTheSliceOverTheCorpus) {
  // 1238 documents of ~336 kB (the shipped corpus) and 1M tokens: ~12 documents, every 51st.
  EXPECT_EQ(heldout_stride(1238, 416'000'000, 1'000'000), 51);
  EXPECT_EQ(heldout_stride(10, 1000, 1'000'000), 1);  // a small corpus: every document is a candidate
  EXPECT_EQ(heldout_stride(0, 0, 100), 1);
}

}  // namespace
}  // namespace ct
