#pragma once
// The real model behind the evaluators' interfaces:
// - GptSequenceScorer: SequenceScorer over GPT::evaluate. Sequences are sorted by length and packed
//   into [B, T] batches of at most max_batch_tokens, padded on the right with target -1 (the model is
//   causal, so padding never changes a real position). score_groups runs each group's shared prefix
//   once (model/shared_prefix_eval.h) and the head only at the positions the caller reads
//   (ScoreGroup::first_needed_position on); with reuse_prefixes = false it falls back to score().
// - GptNextTokenModel: NextTokenModel over GPT::forward_incremental and a one-row KVCache.
#include <cstdint>
#include <memory>
#include <vector>

#include "eval/sampling.h"
#include "eval/sequence_scorer.h"
#include "model/gpt.h"
#include "model/shared_prefix_eval.h"

namespace ct {

class GptSequenceScorer final : public SequenceScorer {
 public:
  // max_batch_tokens bounds the positions of one forward pass (score and score_groups alike).
  explicit GptSequenceScorer(GPT& model, int64_t max_batch_tokens = 16384, bool reuse_prefixes = true);
  int64_t context_length() const override { return model_.config().sequence_len; }
  void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) override;
  void score_groups(const std::vector<ScoreGroup>& groups, std::vector<std::vector<SequenceScores>>& out) override;

 private:
  GPT& model_;
  int64_t max_batch_tokens_;
  bool reuse_prefixes_;
  SharedPrefixEvaluator prefix_evaluator_;
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
