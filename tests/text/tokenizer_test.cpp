// Encoding and decoding: round trips, agreement with a plain reference encoder, determinism and
// thread safety, token_bytes and special tokens.
#include "text/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <random>
#include <thread>

#include "test_support.h"
#include "text/bpe_trainer.h"
#include "text/pretokenizer.h"
#include "text/small_tokenizer.h"
#include "text/synthetic_text.h"
#include "util/error.h"

namespace ct {
namespace {

// The reference: tiktoken's rule written plainly. A chunk that is a token is that token; otherwise
// start from single bytes and repeatedly merge the leftmost adjacent pair whose concatenation is the
// token of lowest rank, until no adjacent pair forms a token.
class ReferenceEncoder {
 public:
  explicit ReferenceEncoder(const Tokenizer& t) {
    const auto sizes = t.token_bytes();
    for (int32_t id = 0; id < t.vocab_size(); ++id)
      if (sizes[id] > 0) rank_[t.token_bytes_of(id)] = id;
  }
  std::vector<int32_t> encode(std::string_view text) const {
    std::vector<int32_t> ids;
    for (std::string_view chunk : pretokenize(text)) {
      if (auto it = rank_.find(std::string(chunk)); it != rank_.end()) {
        ids.push_back(it->second);
        continue;
      }
      std::vector<std::string> parts;
      for (char c : chunk) parts.emplace_back(1, c);
      while (true) {
        int32_t best_rank = -1;
        size_t best = 0;
        for (size_t i = 0; i + 1 < parts.size(); ++i) {
          auto it = rank_.find(parts[i] + parts[i + 1]);
          if (it != rank_.end() && (best_rank < 0 || it->second < best_rank)) {
            best_rank = it->second;
            best = i;
          }
        }
        if (best_rank < 0) break;
        parts[best] += parts[best + 1];
        parts.erase(parts.begin() + static_cast<long>(best) + 1);
      }
      for (const auto& p : parts) ids.push_back(rank_.at(p));
    }
    return ids;
  }

 private:
  std::unordered_map<std::string, int32_t> rank_;
};

// Strings of every kind: synthetic prose, random bytes, random Unicode, and long runs that take the
// encoder's long-chunk path (more than 96 bytes in one chunk).
std::vector<std::string> varied_strings(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    switch (i % 5) {
      case 0: out.push_back(test::synthetic_document(rng, rng() % 300)); break;
      case 1: out.push_back(test::random_bytes(rng, 80)); break;
      case 2: out.push_back(test::random_unicode(rng, 40)); break;
      case 3: {
        std::string word = test::synthetic_document(rng, 20);
        word.erase(std::remove_if(word.begin(), word.end(), [](char c) { return !std::isalpha(static_cast<unsigned char>(c)); }),
                   word.end());
        std::string run;
        while (run.size() < 100 + rng() % 300) run += word.empty() ? "ab" : word;
        out.push_back(run);
        break;
      }
      default: out.push_back(std::string(97 + rng() % 200, " !-\n"[rng() % 4])); break;
    }
  }
  return out;
}

TEST(Tokenizer, DecodeInvertsEncodeOnRandomBytesAndUnicode) {
  const Tokenizer& t = test::small_tokenizer();
  std::mt19937 rng(3);
  for (int i = 0; i < 3000; ++i) {
    const std::string bytes = test::random_bytes(rng, 120);
    ASSERT_EQ(t.decode(t.encode(bytes)), bytes);
    const std::string unicode = test::random_unicode(rng, 60);
    ASSERT_EQ(t.decode(t.encode(unicode)), unicode);
  }
}

TEST(Tokenizer, MatchesThePlainReferenceEncoder) {
  const Tokenizer& t = test::small_tokenizer();
  const ReferenceEncoder reference(t);
  size_t multi_token_chunks = 0;
  for (const std::string& s : varied_strings(5, 3000)) {
    const auto ids = t.encode(s);
    ASSERT_EQ(ids, reference.encode(s)) << "text: " << s;
    multi_token_chunks += ids.size();
  }
  EXPECT_GT(multi_token_chunks, 10000u);  // the test did encode a lot
}

TEST(Tokenizer, CompressesTextLikeItsTrainingText) {
  const Tokenizer& t = test::small_tokenizer();
  std::mt19937 rng(99);
  const std::string text = test::synthetic_document(rng, 20000);
  const double bytes_per_token = double(text.size()) / double(t.encode(text).size());
  EXPECT_GT(bytes_per_token, 2.5);  // bytes alone would give 1.0
}

TEST(Tokenizer, EncodingIsDeterministicAndThreadSafe) {
  const Tokenizer& t = test::small_tokenizer();
  const auto strings = varied_strings(17, 400);
  std::vector<std::vector<int32_t>> expected;
  for (const auto& s : strings) expected.push_back(t.encode(s));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int round = 0; round < 3; ++round)
        for (size_t i = 0; i < strings.size(); ++i) mismatches[k] += t.encode(strings[(i + k * 37) % strings.size()]) !=
                                                                     expected[(i + k * 37) % strings.size()];
    });
  }
  for (auto& th : threads) th.join();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(mismatches[k], 0) << "thread " << k;
}

TEST(Tokenizer, EncodeAppendAppends) {
  const Tokenizer& t = test::small_tokenizer();
  std::vector<int32_t> ids{t.bos_id()};
  t.encode_append("the cat", ids);
  auto plain = t.encode("the cat");
  ASSERT_EQ(ids.size(), plain.size() + 1);
  EXPECT_EQ(ids[0], t.bos_id());
  EXPECT_TRUE(std::equal(plain.begin(), plain.end(), ids.begin() + 1));
}

TEST(Tokenizer, SpecialTokensFollowTheMerges) {
  const Tokenizer& t = test::small_tokenizer();
  EXPECT_EQ(t.vocab_size(), 1024);
  EXPECT_EQ(t.bos_id(), 1022);
  EXPECT_EQ(t.special_id("<|bos|>"), 1022);
  EXPECT_EQ(t.special_id("<|end|>"), 1023);
  EXPECT_EQ(t.special_id("<|nope|>"), -1);
  EXPECT_EQ(t.decode({1022, 1023}), "<|bos|><|end|>");
  EXPECT_EQ(t.token_bytes_of(1022), "");
  // Special strings in text are ordinary text.
  const auto ids = t.encode("<|bos|>");
  EXPECT_GT(ids.size(), 1u);
  for (int32_t id : ids) EXPECT_LT(id, 1022);
}

TEST(Tokenizer, TokenBytesGivesEachIdsLength) {
  const Tokenizer& t = test::small_tokenizer();
  const auto sizes = t.token_bytes();
  ASSERT_EQ(sizes.size(), 1024u);
  for (int32_t id = 0; id < 256; ++id) EXPECT_EQ(sizes[id], 1);
  for (int32_t id = 0; id < 1022; ++id) EXPECT_EQ(sizes[id], static_cast<int32_t>(t.decode({id}).size()));
  EXPECT_EQ(sizes[1022], 0);
  EXPECT_EQ(sizes[1023], 0);
  for (int32_t b = 0; b < 256; ++b) EXPECT_EQ(t.token_bytes_of(b), std::string(1, static_cast<char>(b)));
}

TEST(Tokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const Tokenizer& t = test::small_tokenizer();
  EXPECT_THROW(t.decode({5, 1024}), Error);
  EXPECT_THROW(t.decode({-1}), Error);
  EXPECT_THROW(t.token_bytes_of(5000), Error);
}

TEST(Tokenizer, AnEmptyTokenizerSaysSo) {
  Tokenizer t;
  EXPECT_THROW(t.encode("x"), Error);
}

}  // namespace
}  // namespace ct
