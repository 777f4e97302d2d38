#include "eval/gpt_adapters.h"

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace ct {

GptSequenceScorer::GptSequenceScorer(GPT& model, int64_t max_batch_tokens)
    : model_(model), max_batch_tokens_(std::max<int64_t>(max_batch_tokens, model.config().sequence_len)) {}

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

GptNextTokenModel::GptNextTokenModel(GPT& model) : model_(model) {}

void GptNextTokenModel::reset() { cache_ = std::make_unique<KVCache>(model_, 1, context_length()); }

void GptNextTokenModel::append(const std::vector<int32_t>& tokens, std::vector<float>& last_logits) {
  if (!cache_) reset();
  check(!tokens.empty(), "GptNextTokenModel: nothing to append");
  last_logits.resize(static_cast<size_t>(model_.config().vocab_size));
  model_.forward_incremental(tokens.data(), 1, static_cast<int64_t>(tokens.size()), *cache_, last_logits.data());
}

}  // namespace ct
