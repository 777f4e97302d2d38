#pragma once
// The real model behind the evaluators' interfaces:
// - GptSequenceScorer: SequenceScorer over GPT::evaluate. Sequences are sorted by length and packed
//   into [B, T] batches of at most max_batch_tokens, padded on the right with target -1 (the model is
//   causal, so padding never changes a real position). It does not override score_groups: GPT has
//   no way yet to return per-position losses against a KV cache, so shared prefixes are recomputed.
// - GptNextTokenModel: NextTokenModel over GPT::forward_incremental and a one-row KVCache.
#include <cstdint>
#include <memory>
#include <vector>

#include "eval/sampling.h"
#include "eval/sequence_scorer.h"
#include "model/gpt.h"

namespace ct {

class GptSequenceScorer final : public SequenceScorer {
 public:
  explicit GptSequenceScorer(GPT& model, int64_t max_batch_tokens = 16384);
  int64_t context_length() const override { return model_.config().sequence_len; }
  void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) override;

 private:
  GPT& model_;
  int64_t max_batch_tokens_;
};

class GptNextTokenModel final : public NextTokenModel {
 public:
  explicit GptNextTokenModel(GPT& model);
  int64_t context_length() const override { return model_.config().sequence_len; }
  void reset() override;
  void append(const std::vector<int32_t>& tokens, std::vector<float>& last_logits) override;

 private:
  GPT& model_;
  std::unique_ptr<KVCache> cache_;
};

}  // namespace ct
