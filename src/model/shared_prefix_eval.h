#pragma once
// Evaluation of sequences that share prefixes (the choices of a CORE question), without recomputing
// the shared part and without the lm_head where no loss is wanted.
//
// A group is a prefix (positions 0..P-1) and rows of continuation tokens (row r: positions
// P..P+C_r-1). One pass runs, layer by layer, every prefix once and every continuation row, packed
// into one flat [N, C] stream (no padding between prefixes; a group's rows are padded to its longest
// continuation): the position-wise ops (norms, linear layers, MLP) see all N positions at once,
// rotary embedding and attention are called per group, and a continuation row attends to its
// group's prefix keys and values followed by its own (causal), exactly as if the whole sequence were
// one row. The head (the largest matmul at vocab 8192) and the cross-entropy run only on the
// positions whose target is >= 0.
//
// Results equal GPT::evaluate on the full sequences up to the float rounding of the kernels (a gemm
// over other rows may round differently); the tests compare the two.
#include <cstdint>
#include <vector>

#include <memory>

#include "backend/backend.h"
#include "model/gpt.h"

namespace ct {

struct SharedPrefixGroup {
  std::vector<int32_t> prefix;                    // P >= 0 tokens at positions 0..P-1
  std::vector<std::vector<int32_t>> inputs;       // per row: C_r >= 1 tokens at positions P..P+C_r-1
  std::vector<std::vector<int32_t>> targets;      // per row: C_r next tokens; < 0 = no loss wanted there
};

// Per row of a group: loss and argmax at each continuation position (NaN and -1 where the target
// is < 0: nothing was computed there).
struct SharedPrefixRowScores {
  std::vector<float> loss;
  std::vector<int32_t> argmax;
};

class SharedPrefixEvaluator {
 public:
  explicit SharedPrefixEvaluator(GPT& model);
  ~SharedPrefixEvaluator();

  // Positions computed by one pass over these groups (prefixes plus padded continuation rows): the
  // size that memory grows with; a caller bounds it by splitting the groups.
  static int64_t positions(const SharedPrefixGroup& group);

  // out[g][r] belongs to groups[g] row r. P + C_r must not exceed the model's sequence_len.
  void evaluate(const std::vector<SharedPrefixGroup>& groups, std::vector<std::vector<SharedPrefixRowScores>>& out);

 private:
  class PrefixGroups;  // the AttentionPositions of a pass (shared_prefix_eval.cpp)
  void ensure_capacity(int64_t positions, int64_t kv_rows, int64_t head_rows);

  GPT& model_;
  // Offsets of the current pass (in positions of the flat stream).
  std::vector<int64_t> prefix_offset_, rows_offset_, row_length_;
  int64_t kv_capacity_ = 0, head_capacity_ = 0;
  std::unique_ptr<Activations> acts_;  // the trunk's buffers: one layer's worth, no head
  Buffer keys_, values_;  // one group's [rows, P + C_max, Hkv*D] keys and values
  Buffer gathered_, logits_, head_targets_, losses_, argmax_;
};

}  // namespace ct
