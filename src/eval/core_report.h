#pragma once
// CORE results as JSON (docs/eval.md: per task label, shots, type, rows, accuracy, centered, seconds, and
// the aggregate) and as a table for the terminal; and the per-row dump used by --dump-prompts and
// the parity test against tests/python/core_reference.py.
#include <string>

#include "eval/core_eval.h"
#include "util/json.h"

namespace ct {

OrderedJson core_result_json(const CoreResult& result);
std::string core_result_table(const CoreResult& result);

// Every kept row of every task: few-shot indices, prompts, token sequences, spans, mean losses,
// choice and verdict (needs CoreOptions::keep_rows). NaN mean losses are written as null.
OrderedJson core_rows_json(const CoreResult& result);

}  // namespace ct
