// BPE training: agreement with a plain trainer that recounts every pair at every step, determinism
// whatever the thread count and work sizes, the caps, and the errors.
#include "text/bpe_trainer.h"

#include <gmock/gmock.h>

#include <map>
#include <random>

#include "test_support.h"
#include "text/pretokenizer.h"
#include "text/synthetic_text.h"
#include "util/error.h"

namespace ct {
namespace {

// The plain trainer: docs/formats.md's rule with no incremental bookkeeping. At each step count every
// adjacent pair in every chunk (overlaps included, weighted by the chunk's count), take the most
// frequent (ties: smallest (left id, right id)), replace it left to right everywhere. A merge whose
// bytes already are a token reuses that token. Returns the bytes of every rank.
std::vector<std::string> plain_train(const std::vector<std::string>& docs, int32_t num_ranks) {
  std::map<std::string, int64_t> chunk_counts;
  for (const auto& doc : docs)
    for (auto chunk : pretokenize(doc)) chunk_counts[std::string(chunk)] += 1;
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  for (const auto& [chunk, count] : chunk_counts) {
    std::vector<int32_t> ids;
    for (char c : chunk) ids.push_back(static_cast<uint8_t>(c));
    words.emplace_back(ids, count);
  }
  std::vector<std::string> rank_bytes;
  for (int b = 0; b < 256; ++b) rank_bytes.emplace_back(1, static_cast<char>(b));
  while (static_cast<int32_t>(rank_bytes.size()) < num_ranks) {
    std::map<std::pair<int32_t, int32_t>, int64_t> pair_counts;
    for (const auto& [ids, count] : words)
      for (size_t i = 0; i + 1 < ids.size(); ++i) pair_counts[{ids[i], ids[i + 1]}] += count;
    if (pair_counts.empty()) break;
    auto best = pair_counts.begin();  // std::map order: smallest pair first, so '>' keeps the smallest on ties
    for (auto it = pair_counts.begin(); it != pair_counts.end(); ++it)
      if (it->second > best->second) best = it;
    const auto [left, right] = best->first;
    const std::string bytes = rank_bytes[left] + rank_bytes[right];
    int32_t merged = -1;
    for (size_t r = 0; r < rank_bytes.size(); ++r)
      if (rank_bytes[r] == bytes) merged = static_cast<int32_t>(r);
    if (merged < 0) {
      merged = static_cast<int32_t>(rank_bytes.size());
      rank_bytes.push_back(bytes);
    }
    for (auto& [ids, count] : words) {
      std::vector<int32_t> out;
      for (size_t i = 0; i < ids.size();) {
        if (i + 1 < ids.size() && ids[i] == left && ids[i + 1] == right) {
          out.push_back(merged);
          i += 2;
        } else {
          out.push_back(ids[i++]);
        }
      }
      ids = std::move(out);
    }
  }
  return rank_bytes;
}

Tokenizer train(const std::vector<std::string>& docs, BpeTrainerOptions options, BpeTrainingStats* stats = nullptr) {
  BpeTrainer trainer(options);
  for (const auto& d : docs)
    if (!trainer.add_document(d)) break;
  Tokenizer t = trainer.train();
  if (stats) *stats = trainer.stats();
  return t;
}

std::vector<std::string> rank_bytes_of(const Tokenizer& t, int32_t num_ranks) {
  std::vector<std::string> out;
  for (int32_t id = 0; id < num_ranks; ++id) out.push_back(t.token_bytes_of(id));
  return out;
}

TEST(BpeTrainer, MatchesThePlainTrainer) {
  const auto docs = test::synthetic_corpus(3, 12, 5000);
  BpeTrainerOptions options;
  options.vocab_size = 256 + 300 + 1;
  const Tokenizer t = train(docs, options);
  EXPECT_EQ(rank_bytes_of(t, 556), plain_train(docs, 556));
}

// Tiny alphabets make many ties, overlapping runs ("aaaa") and merges that reach bytes an earlier
// merge already made; the incremental counts must still agree with recounting from scratch.
TEST(BpeTrainer, MatchesThePlainTrainerOnTinyAlphabets) {
  std::mt19937 rng(12);
  int reused = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::string> docs;
    const std::string alphabet = trial % 2 ? "ab" : "abc";
    for (int d = 0; d < 3; ++d) {
      std::string doc;
      for (int w = 0; w < 40; ++w) {
        doc += ' ';
        for (int k = rng() % 9; k >= 0; --k) doc += alphabet[rng() % alphabet.size()];
      }
      docs.push_back(doc);
    }
    const auto expected = plain_train(docs, 256 + 25);
    BpeTrainerOptions options;
    options.vocab_size = static_cast<int32_t>(expected.size()) + 1;
    if (expected.size() == 256) continue;
    BpeTrainingStats stats;
    const Tokenizer t = train(docs, options, &stats);
    ASSERT_EQ(rank_bytes_of(t, static_cast<int32_t>(expected.size())), expected) << "trial " << trial;
    reused += stats.reused_tokens;
  }
  std::cout << "merges that reused an existing token: " << reused << "\n";
}

TEST(BpeTrainer, SameResultWhateverThreadsAndWorkSizes) {
  const auto docs = test::synthetic_corpus(5, 30, 8000);
  BpeTrainerOptions options;
  options.vocab_size = 700;
  options.threads = 1;
  const std::string reference = train(docs, options).sha256();
  for (int threads : {2, 3}) {
    options.threads = threads;
    options.batch_bytes = 20000;  // many batches
    options.piece_bytes = 700;    // documents cut into many pieces
    EXPECT_EQ(train(docs, options).sha256(), reference) << threads << " threads";
  }
  options.threads = 2;
  options.batch_bytes = size_t{32} << 20;
  options.piece_bytes = size_t{1} << 20;
  EXPECT_EQ(train(docs, options).sha256(), reference);
}

TEST(BpeTrainer, DocCapKeepsTheStartOfEachDocument) {
  const auto docs = test::synthetic_corpus(7, 10, 3000);
  BpeTrainerOptions options;
  options.vocab_size = 400;
  options.doc_cap = 500;
  BpeTrainingStats stats;
  const std::string capped = train(docs, options, &stats).sha256();
  std::vector<std::string> cut;
  int64_t chars = 0;
  for (const auto& d : docs) {
    cut.emplace_back(prefix_of_code_points(d, 500));
    chars += static_cast<int64_t>(count_code_points(cut.back()));
  }
  EXPECT_EQ(stats.chars, chars);
  EXPECT_EQ(stats.documents, 10);
  options.doc_cap = 0;
  EXPECT_EQ(train(cut, options).sha256(), capped);
}

TEST(BpeTrainer, MaxCharsStopsReadingAndCutsTheLastDocument) {
  const auto docs = test::synthetic_corpus(9, 10, 3000);
  BpeTrainerOptions options;
  options.vocab_size = 400;
  options.max_chars = 7000;
  BpeTrainer trainer(options);
  size_t accepted = 0;
  while (accepted < docs.size() && trainer.add_document(docs[accepted])) ++accepted;
  EXPECT_LT(accepted, docs.size());  // it asked to stop
  EXPECT_EQ(trainer.stats().chars, 7000);
  const std::string limited = trainer.train().sha256();
  // The same as training on exactly the first 7000 characters.
  std::vector<std::string> first;
  int64_t left = 7000;
  for (const auto& d : docs) {
    if (left == 0) break;
    first.emplace_back(prefix_of_code_points(d, static_cast<size_t>(left)));
    left -= static_cast<int64_t>(count_code_points(first.back()));
  }
  options.max_chars = 0;
  EXPECT_EQ(train(first, options).sha256(), limited);
}

TEST(BpeTrainer, RefusesBadOptionsAndTooLittleText) {
  BpeTrainerOptions options;
  options.vocab_size = 256;
  EXPECT_THROW(BpeTrainer{options}, Error);
  options.vocab_size = 1000;
  options.special_tokens = {"<|end|>", "<|bos|>"};
  EXPECT_THROW(BpeTrainer{options}, Error);
  options.special_tokens = {"<|bos|>"};
  BpeTrainer trainer(options);
  trainer.add_document("just a few words");
  try {
    trainer.train();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("only enough distinct pairs"));
  }
}

TEST(BpeTrainer, SmallestVocabularyIsBytesAndSpecials) {
  BpeTrainerOptions options;
  options.vocab_size = 258;
  options.special_tokens = {"<|bos|>", "<|end|>"};
  const Tokenizer t = train({"hello"}, options);
  EXPECT_EQ(t.vocab_size(), 258);
  EXPECT_EQ(t.bos_id(), 256);
  EXPECT_EQ(t.encode("hi"), (std::vector<int32_t>{'h', 'i'}));
}

}  // namespace
}  // namespace ct
