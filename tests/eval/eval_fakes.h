#pragma once
// Stand-ins for the tokenizer and the model, so the evaluators are tested without a trained model.
// ToyEncoder and HashFakeScorer have exact twins in tests/python/core_reference.py (--toy-tokenizer,
// --fake-model hash): the parity test runs both and compares every prompt, span and verdict.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "eval/sequence_scorer.h"
#include "data/text_encoder.h"
#include "test_support.h"

namespace ct::test {

// The small CORE bundle of the tests (tests/data/core_small: a few rows of each task type).
inline std::filesystem::path small_core_bundle() { return source_dir() / "tests/data/core_small"; }

inline uint32_t fnv1a32(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// A word-level stand-in for BPE that merges like one: a token is a run of ASCII letters and digits,
// optionally with one space in front (" Paris"), or else a single byte. The id is a hash of the
// token's bytes in [1, 2^24); BOS is 0. So "x" + "Paris" and "xParis" tokenize differently, as a
// real tokenizer would.
class ToyEncoder final : public TextEncoder {
 public:
  static constexpr int32_t kVocab = 1 << 24;
  static bool alnum(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
  static std::vector<std::string> pieces(std::string_view text) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < text.size()) {
      size_t j = i;
      if (text[j] == ' ' && j + 1 < text.size() && alnum(text[j + 1])) ++j;
      if (alnum(text[j])) {
        while (j < text.size() && alnum(text[j])) ++j;
      } else {
        j = i + 1;
      }
      out.emplace_back(text.substr(i, j - i));
      i = j;
    }
    return out;
  }
  static int32_t id_of(std::string_view piece) { return 1 + static_cast<int32_t>(fnv1a32(piece) % (kVocab - 1)); }
  void encode_append(std::string_view text, std::vector<int32_t>& out) const override {
    for (const auto& p : pieces(text)) out.push_back(id_of(p));
  }
  std::vector<int32_t> encode(std::string_view text) const {
    std::vector<int32_t> ids;
    encode_append(text, ids);
    return ids;
  }
  int32_t bos_id() const override { return 0; }
  int64_t vocab_size() const override { return kVocab; }
  std::string sha256() const override { return "toy-encoder"; }
};

// A deterministic causal "model": h_i = FNV-style hash of tokens[0..i];
//   loss[i]   = ((h_i ^ (tokens[i+1] * 2654435761)) mod 2^32 mod 1009) / 64   (exact in float)
//   argmax[i] = tokens[i+1] when h_i % 3 == 0, else tokens[i+1] + 1 (mod vocab)
// It overrides score_groups to hash each group's shared prefix once, as a KV-cache model would.
class HashFakeScorer final : public SequenceScorer {
 public:
  explicit HashFakeScorer(int64_t max_len) : max_len_(max_len) {}
  int64_t context_length() const override { return max_len_; }
  int64_t calls = 0, group_calls = 0, sequences_scored = 0, prefix_tokens_reused = 0;

  static uint32_t step(uint32_t h, int32_t token) { return (h ^ static_cast<uint32_t>(token)) * 16777619u; }

  void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) override {
    ++calls;
    out.assign(sequences.size(), {});
    for (size_t s = 0; s < sequences.size(); ++s) score_from(sequences[s], 0, 2166136261u, out[s]);
  }

  void score_groups(const std::vector<ScoreGroup>& groups, std::vector<std::vector<SequenceScores>>& out) override {
    ++group_calls;
    out.assign(groups.size(), {});
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto& seqs = groups[g].sequences;
      // Hash the shared prefix once (all but its last token, whose row is computed per sequence).
      const size_t shared = static_cast<size_t>(std::max<int64_t>(0, groups[g].shared_prefix_tokens - 1));
      uint32_t h = 2166136261u;
      for (size_t i = 0; i < shared; ++i) h = step(h, seqs[0][i]);
      prefix_tokens_reused += static_cast<int64_t>(shared * (seqs.size() - 1));
      out[g].resize(seqs.size());
      for (size_t s = 0; s < seqs.size(); ++s) {
        // Positions before `shared` were not recomputed; fill them anyway from a full pass only
        // when they are needed (first_needed_position says whether they are).
        if (static_cast<int64_t>(shared) > groups[g].first_needed_position) {
          score_from(seqs[s], 0, 2166136261u, out[g][s]);
        } else {
          score_from(seqs[s], shared, h, out[g][s]);
        }
      }
    }
  }

 private:
  void score_from(const std::vector<int32_t>& t, size_t start, uint32_t h, SequenceScores& out) {
    ++sequences_scored;
    const size_t n = t.size() - 1;
    out.loss.assign(n, std::numeric_limits<float>::quiet_NaN());
    out.argmax.assign(n, -1);
    for (size_t i = start; i < n; ++i) {
      h = step(h, t[i]);
      const uint32_t target = static_cast<uint32_t>(t[i + 1]);
      out.loss[i] = static_cast<float>(((h ^ (target * 2654435761u)) % 1009u) / 64.0);
      out.argmax[i] = (h % 3 == 0) ? t[i + 1] : static_cast<int32_t>((target + 1) % ToyEncoder::kVocab);
    }
  }
  int64_t max_len_;
};

// A fake whose verdicts can be worked out by hand: loss[i] = cost(tokens[i+1]) (1 unless listed),
// halved when a "good" token occurs in tokens[0..i]; argmax[i] = tokens[i+1] when that token is in
// `known`, else 0 (BOS).
class RuleFakeScorer final : public SequenceScorer {
 public:
  RuleFakeScorer(int64_t max_len, std::map<int32_t, float> cost, std::set<int32_t> good, std::set<int32_t> known)
      : max_len_(max_len), cost_(std::move(cost)), good_(std::move(good)), known_(std::move(known)) {}
  int64_t context_length() const override { return max_len_; }
  void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) override {
    out.assign(sequences.size(), {});
    for (size_t s = 0; s < sequences.size(); ++s) {
      const auto& t = sequences[s];
      EXPECT_LE(static_cast<int64_t>(t.size()), max_len_);
      bool seen_good = false;
      for (size_t i = 0; i + 1 < t.size(); ++i) {
        seen_good = seen_good || good_.count(t[i]);
        auto it = cost_.find(t[i + 1]);
        float c = it == cost_.end() ? 1.0f : it->second;
        out[s].loss.push_back(seen_good ? c * 0.5f : c);
        out[s].argmax.push_back(known_.count(t[i + 1]) ? t[i + 1] : 0);
      }
    }
  }

 private:
  int64_t max_len_;
  std::map<int32_t, float> cost_;
  std::set<int32_t> good_, known_;
};

}  // namespace ct::test
