#pragma once
// Text generation from a model with a KV cache (`clocktrain sample`): the prompt is run once, then
// one token at a time; each next token is the argmax (temperature 0) or a draw from
// softmax(logits / temperature) over the top_k largest logits, with a seeded generator (the
// CPython-compatible one), so a seed always gives the same text.
#include <cstdint>
#include <functional>
#include <vector>

#include "util/python_random.h"

namespace ct {

// A model run incrementally: append() feeds new tokens after those already seen and returns the
// logits of the last one.
class NextTokenModel {
 public:
  virtual ~NextTokenModel() = default;
  virtual int64_t context_length() const = 0;  // the most tokens the cache holds
  virtual void reset() = 0;                     // forget every token seen
  virtual void append(const std::vector<int32_t>& tokens, std::vector<float>& last_logits) = 0;
};

struct SampleOptions {
  int64_t max_tokens = 64;   // new tokens at most
  double temperature = 1.0;  // 0 = greedy
  int64_t top_k = 0;         // 0 = the whole vocabulary
  int64_t seed = 42;
  int32_t stop_token = -1;   // stop after producing this token (e.g. <|bos|>: a new document); -1 = never
};

// The next token from logits: argmax for temperature 0 (the lowest id among equal maxima); else keep
// the top_k largest logits (ties broken by the lower id), softmax(logit / temperature) in float64,
// and pick the first id whose cumulative probability exceeds rng.random().
int32_t pick_next_token(const std::vector<float>& logits, double temperature, int64_t top_k, PythonRandom& rng);

// Generates after `prompt` (which must be non-empty; a prompt longer than the context keeps its last
// tokens). Stops at max_tokens, at stop_token, or when the context is full. on_token (optional) sees
// each new token as it is made. Returns the new tokens.
std::vector<int32_t> sample_tokens(NextTokenModel& model, std::vector<int32_t> prompt, const SampleOptions& options,
                                   const std::function<void(int32_t)>& on_token = {});

}  // namespace ct
