#include "eval/core_spans.h"

#include <algorithm>

#include "util/error.h"

namespace ct {

int64_t common_token_length(const std::vector<std::vector<int32_t>>& sequences, bool from_end) {
  if (sequences.empty()) return 0;
  size_t min_len = sequences[0].size();
  for (const auto& s : sequences) min_len = std::min(min_len, s.size());
  for (size_t i = 0; i < min_len; ++i) {
    auto at = [&](const std::vector<int32_t>& s) { return from_end ? s[s.size() - 1 - i] : s[i]; };
    const int32_t token = at(sequences[0]);
    for (const auto& s : sequences)
      if (at(s) != token) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(min_len);
}

CoreQuestion build_core_question(CoreTaskType type, const std::vector<std::string>& prompts, int gold,
                                 const TextEncoder& encoder, int64_t context_length) {
  CoreQuestion q;
  q.gold = gold;
  std::vector<std::vector<int32_t>> tokens;
  tokens.reserve(prompts.size());
  for (const auto& p : prompts) {
    std::vector<int32_t> t{encoder.bos_id()};
    encoder.encode_append(p, t);
    tokens.push_back(std::move(t));
  }
  switch (type) {
    case CoreTaskType::kMultipleChoice: {
      // The answer starts where the prompts stop agreeing and ends at each prompt's end.
      const int64_t start = common_token_length(tokens, false);
      for (auto& t : tokens) {
        const auto len = static_cast<int64_t>(t.size());
        q.sequences.push_back({std::move(t), start, len});
      }
      break;
    }
    case CoreTaskType::kSchema: {
      // The scored part is the continuation all options share: the common suffix.
      const int64_t suffix = common_token_length(tokens, true);
      for (auto& t : tokens) {
        const auto len = static_cast<int64_t>(t.size());
        q.sequences.push_back({std::move(t), len - suffix, len});
      }
      break;
    }
    case CoreTaskType::kLanguageModeling: {
      check(tokens.size() == 2, "language_modeling: expected two prompts (without, with)");
      const auto& without = tokens[0];
      const auto& with = tokens[1];
      // A prefix, not necessarily a proper one: a continuation that adds no tokens leaves an empty span,
      // which docs/eval.md's rule ("the greedy argmax at every span position") judges correct.
      const bool is_prefix = without.size() <= with.size() && std::equal(without.begin(), without.end(), with.begin());
      if (!is_prefix) {
        q.prefix_mismatch = true;
        return q;
      }
      q.sequences.push_back({tokens[1], static_cast<int64_t>(without.size()), static_cast<int64_t>(with.size())});
      break;
    }
  }
  for (auto& s : q.sequences) {
    const auto len = static_cast<int64_t>(s.tokens.size());
    if (context_length > 0 && len > context_length) {
      const int64_t crop = len - context_length;
      s.tokens.erase(s.tokens.begin(), s.tokens.begin() + crop);
      s.span_begin -= crop;
      s.span_end -= crop;
      q.truncated = true;
    }
    // Token 0 has no prediction; a span reaching before position 1 keeps only what can be scored.
    // (Besides truncation, only a schema row whose options are all identical gets here.)
    if (s.span_begin < 1) {
      s.span_begin = 1;
      q.clamped = true;
    }
  }
  return q;
}

}  // namespace ct
