#pragma once
// Steps 2 and 3 of docs/eval.md's CORE procedure: few-shot selection and prompt rendering.
#include <cstddef>
#include <string>
#include <vector>

#include "eval/core_bundle.h"

namespace ct {

// The k few-shot rows of row idx among n kept rows: random.Random(1234 + idx).sample(
// [i for i in range(n) if i != idx], k), bit-identical to CPython. Requires k < n.
std::vector<size_t> core_fewshot_indices(size_t n, size_t idx, int k);

// The prompts of one row (d = the continuation delimiter; each shot is followed by "\n\n"):
//   multiple_choice: one per choice, shots + query + d + choice
//   schema:          one per context option, shots + option + d + continuation
//   language_modeling: two, [strip(shots + trim(context) + d), shots + trim(context) + d + continuation]
std::vector<std::string> render_core_prompts(CoreTaskType type, const std::string& delimiter, const CoreRow& item,
                                             const std::vector<const CoreRow*>& shots);

}  // namespace ct
