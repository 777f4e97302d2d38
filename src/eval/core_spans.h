#pragma once
// Step 4 of docs/eval.md's CORE procedure: tokenize a row's prompts (BOS first), find the scored span of
// each, and fit every sequence into the model's context.
#include <cstdint>
#include <string>
#include <vector>

#include "eval/core_bundle.h"
#include "data/text_encoder.h"

namespace ct {

// One sequence to score. The span [span_begin, span_end) holds the token indices whose prediction is
// scored: token t is predicted at position t-1, so the losses used are those at positions
// span_begin-1 .. span_end-2.
struct CoreSequence {
  std::vector<int32_t> tokens;
  int64_t span_begin = 0;
  int64_t span_end = 0;
};

// A row ready for the model: one sequence per choice (multiple_choice, schema) or one sequence
// (language_modeling).
struct CoreQuestion {
  std::vector<CoreSequence> sequences;
  int gold = -1;                 // the correct choice (multiple_choice, schema)
  bool prefix_mismatch = false;  // language_modeling: tokens(without) is not a prefix of tokens(with)
                                 // (equal ones are: an empty span, correct); the row is wrong and
                                 // nothing is scored
  bool truncated = false;        // some sequence was longer than the context and lost its start
  bool clamped = false;          // some span started before position 1 after truncation
};

// Length of the common prefix (from_end = false) or suffix (true) of all sequences.
int64_t common_token_length(const std::vector<std::vector<int32_t>>& sequences, bool from_end);

// Tokenizes prompts (from render_core_prompts) and builds the row's sequences and spans, then keeps
// the last `context_length` tokens of any longer sequence, shifting its span, and clamps a span
// that would start before position 1 to start at 1. context_length <= 0 means no limit.
CoreQuestion build_core_question(CoreTaskType type, const std::vector<std::string>& prompts, int gold,
                                 const TextEncoder& encoder, int64_t context_length);

}  // namespace ct
