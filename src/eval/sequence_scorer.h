#pragma once
// The one thing the evaluators need from a model: for a token sequence, the loss and the argmax at
// every position. The real GPT (src/model) and the fake models of the tests both implement it, so
// the CORE and bpb logic is tested without a trained model.
//
// Contract (for a sequence tokens[0..L)):
//   loss[i]   = cross-entropy (natural log) of predicting tokens[i+1] at position i, 0 <= i < L-1,
//               from the model's final (softcapped, fp32) logits;
//   argmax[i] = the id with the largest logit at position i (the lowest id among equal maxima).
// The model must be causal: position i depends on tokens[0..i] only. Results must not depend on how
// sequences are grouped into calls (beyond float rounding of a real model's kernels).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ct {

struct SequenceScores {
  std::vector<float> loss;      // L-1 entries
  std::vector<int32_t> argmax;  // L-1 entries
};

// Sequences scored together because they share a beginning (the choices of one CORE question).
// A model with a KV cache may run the shared prefix once (see score_groups).
struct ScoreGroup {
  std::vector<std::vector<int32_t>> sequences;
  int64_t shared_prefix_tokens = 0;   // every sequence starts with the same this many tokens
  int64_t first_needed_position = 0;  // loss/argmax are read only at positions >= this; earlier
                                      // entries may be left as anything (NaN, -1)
};

class SequenceScorer {
 public:
  virtual ~SequenceScorer() = default;

  // The model's context T: the most positions one forward pass takes. score() accepts sequences of
  // 1..T+1 tokens (the last token is only a target, never an input): CORE truncates its sequences
  // to T tokens (docs/eval.md), val_bpb scores rows of T+1 tokens.
  virtual int64_t context_length() const = 0;

  // Scores each sequence (lengths may all differ). out is resized to sequences.size().
  virtual void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) = 0;

  // Scores groups of sequences; out[g][s] belongs to groups[g].sequences[s]. The default flattens
  // every group into one score() call; a model that can reuse a shared prefix overrides it.
  virtual void score_groups(const std::vector<ScoreGroup>& groups, std::vector<std::vector<SequenceScores>>& out);
};

}  // namespace ct
