#include "eval/gpt_adapters.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "util/error.h"

namespace ct {

GptSequenceScorer::GptSequenceScorer(GPT& model, int64_t max_batch_tokens, bool reuse_prefixes)
    : model_(model),
      max_batch_tokens_(std::max<int64_t>(max_batch_tokens, model.config().sequence_len)),
      reuse_prefixes_(reuse_prefixes),
      prefix_evaluator_(model) {}

void GptSequenceScorer::score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) {
  out.assign(sequences.size(), {});
  const int64_t context = context_length();
  const int64_t vocab = model_.config().vocab_size;
  std::vector<size_t> order;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const auto& s = sequences[i];
    check(static_cast<int64_t>(s.size()) <= context + 1, "GptSequenceScorer: a sequence of ", s.size(),
          " tokens exceeds the context of ", context, " (+1 target)");
    for (int32_t t : s) check(t >= 0 && t < vocab, "GptSequenceScorer: token ", t, " outside the vocabulary of ", vocab);
    if (s.size() >= 2) order.push_back(i);
  }
  // Longest first, so each batch's rows have similar lengths (ties by index: deterministic).
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sequences[a].size() > sequences[b].size(); });
  std::vector<int32_t> inputs, targets, argmax;
  std::vector<float> losses;
  for (size_t first = 0; first < order.size();) {
    const int64_t T = static_cast<int64_t>(sequences[order[first]].size()) - 1;
    const int64_t rows = std::max<int64_t>(1, max_batch_tokens_ / T);
    const size_t last = std::min(order.size(), first + static_cast<size_t>(rows));
    const int64_t B = static_cast<int64_t>(last - first);
    inputs.assign(static_cast<size_t>(B * T), 0);
    targets.assign(static_cast<size_t>(B * T), -1);
    for (int64_t b = 0; b < B; ++b) {
      const auto& s = sequences[order[first + b]];
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        inputs[b * T + i] = s[i];
        targets[b * T + i] = s[i + 1];
      }
    }
    losses.resize(inputs.size());
    argmax.resize(inputs.size());
    model_.evaluate(inputs.data(), targets.data(), B, T, losses.data(), argmax.data());
    for (int64_t b = 0; b < B; ++b) {
      const size_t n = sequences[order[first + b]].size() - 1;
      auto& o = out[order[first + b]];
      o.loss.assign(losses.begin() + b * T, losses.begin() + b * T + static_cast<int64_t>(n));
      o.argmax.assign(argmax.begin() + b * T, argmax.begin() + b * T + static_cast<int64_t>(n));
    }
    first = last;
  }
}

// Each group becomes a SharedPrefixGroup: prefix = the first P tokens, with
//   P = min(shared_prefix_tokens, first_needed_position, L_s - 2 for every sequence s of >= 2 tokens),
// so every wanted position (>= first_needed_position) lies in a continuation row and every row keeps
// at least one input. Row s: inputs tokens[P .. L_s-2], targets tokens[P+1 .. L_s-1], with target -1
// (no head computed) before first_needed_position. Groups are packed into passes of at most
// max_batch_tokens positions (a group never split), in the caller's order.
void GptSequenceScorer::score_groups(const std::vector<ScoreGroup>& groups,
                                     std::vector<std::vector<SequenceScores>>& out) {
  if (!reuse_prefixes_) {
    SequenceScorer::score_groups(groups, out);
    return;
  }
  const int64_t context = context_length(), vocab = model_.config().vocab_size;
  out.assign(groups.size(), {});
  std::vector<SharedPrefixGroup> pass;
  std::vector<size_t> pass_groups;
  std::vector<std::vector<size_t>> pass_rows;  // per group of the pass: the sequences it scores
  int64_t pass_positions = 0;
  std::vector<std::vector<SharedPrefixRowScores>> scores;
  auto run_pass = [&]() {
    if (pass.empty()) return;
    prefix_evaluator_.evaluate(pass, scores);
    for (size_t k = 0; k < pass.size(); ++k) {
      const ScoreGroup& g = groups[pass_groups[k]];
      auto& dst = out[pass_groups[k]];
      const int64_t P = static_cast<int64_t>(pass[k].prefix.size());
      for (size_t r = 0; r < pass_rows[k].size(); ++r) {
        SequenceScores& o = dst[pass_rows[k][r]];
        const size_t n = g.sequences[pass_rows[k][r]].size() - 1;
        o.loss.assign(n, std::numeric_limits<float>::quiet_NaN());
        o.argmax.assign(n, -1);
        std::copy(scores[k][r].loss.begin(), scores[k][r].loss.end(), o.loss.begin() + P);
        std::copy(scores[k][r].argmax.begin(), scores[k][r].argmax.end(), o.argmax.begin() + P);
      }
    }
    pass.clear();
    pass_groups.clear();
    pass_rows.clear();
    pass_positions = 0;
  };
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const ScoreGroup& g = groups[gi];
    out[gi].resize(g.sequences.size());
    std::vector<size_t> rows;  // sequences with at least one target (shorter ones have no scores)
    int64_t P = std::max<int64_t>(0, std::min(g.shared_prefix_tokens, g.first_needed_position));
    for (size_t s = 0; s < g.sequences.size(); ++s) {
      const auto& seq = g.sequences[s];
      check(static_cast<int64_t>(seq.size()) <= context + 1, "GptSequenceScorer: a sequence of ", seq.size(),
            " tokens exceeds the context of ", context, " (+1 target)");
      for (int32_t t : seq) check(t >= 0 && t < vocab, "GptSequenceScorer: token ", t, " outside the vocabulary of ", vocab);
      if (seq.size() < 2) continue;
      rows.push_back(s);
      P = std::min(P, static_cast<int64_t>(seq.size()) - 2);  // keeps position L-2 (the last input)
    }
    if (rows.empty()) continue;
    SharedPrefixGroup spg;
    const auto& first = g.sequences[rows[0]];
    spg.prefix.assign(first.begin(), first.begin() + P);
    for (size_t s : rows) {
      const auto& seq = g.sequences[s];
      check(std::equal(spg.prefix.begin(), spg.prefix.end(), seq.begin()), "GptSequenceScorer: sequence ", s,
            " of a group does not start with the group's ", P, " shared tokens");
      std::vector<int32_t> targets(seq.begin() + P + 1, seq.end());
      for (int64_t i = 0; i < static_cast<int64_t>(targets.size()); ++i)
        if (P + i < g.first_needed_position) targets[static_cast<size_t>(i)] = -1;
      spg.inputs.emplace_back(seq.begin() + P, seq.end() - 1);
      spg.targets.push_back(std::move(targets));
    }
    const int64_t positions = SharedPrefixEvaluator::positions(spg);
    if (!pass.empty() && pass_positions + positions > max_batch_tokens_) run_pass();
    pass.push_back(std::move(spg));
    pass_groups.push_back(gi);
    pass_rows.push_back(std::move(rows));
    pass_positions += positions;
  }
  run_pass();
}

GptNextTokenModel::GptNextTokenModel(GPT& model) : model_(model) {}

void GptNextTokenModel::reset() { cache_ = std::make_unique<KVCache>(model_, 1, context_length()); }

void GptNextTokenModel::append(const std::vector<int32_t>& tokens, std::vector<float>& last_logits) {
  if (!cache_) reset();
  check(!tokens.empty(), "GptNextTokenModel: nothing to append");
  last_logits.resize(static_cast<size_t>(model_.config().vocab_size));
  model_.forward_incremental(tokens.data(), 1, static_cast<int64_t>(tokens.size()), *cache_, last_logits.data());
}

}  // namespace ct
