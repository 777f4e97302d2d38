#pragma once
// The evaluators on a saved checkpoint (what `clocktrain eval` and the harness call): the model and
// its tokenizer come from the checkpoint folder only (config.json, model.safetensors,
// tokenizer.tiktoken, tokenizer_clocktrain.json), the text from the pinned data.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "eval/bpb.h"
#include "eval/core_eval.h"
#include "model/gpt.h"
#include "text/tokenizer.h"
#include "util/json.h"
#include "util/read_guard.h"

namespace ct {

struct EvalCheckpoint {
  std::filesystem::path dir;
  std::unique_ptr<GPT> model;
  Tokenizer tokenizer;
  std::string weights_sha256;  // SHA-256 of model.safetensors (the gate's trusted_evaluation)
};

// Loads the model (fp32) onto `backend` and the tokenizer beside it; checks each file against the
// folder's SHA256SUMS (where it has one), every weight finite, and that model and tokenizer agree on
// the vocabulary size. weights_sha256 hashes model.safetensors as found when loading. With a guard,
// every file is admitted before it is read (an evaluator's guard allows only the checkpoint and the
// pinned data: see evaluator_read_guard).
EvalCheckpoint load_eval_checkpoint(Backend& backend, const std::filesystem::path& dir, ReadGuard* guard = nullptr);

// A guard that allows reads under the given folders only (the checkpoint, DATA/val, the bundle).
void allow_evaluator_reads(ReadGuard& guard, const std::vector<std::filesystem::path>& roots);

// val_bpb over the documents of val_dir (DATA/val), tokenized with the checkpoint's tokenizer.
// options.sequence_len 0 = the model's sequence_len.
BpbResult evaluate_checkpoint_bpb(EvalCheckpoint& checkpoint, const std::filesystem::path& val_dir,
                                  const BpbOptions& options, int64_t batch_tokens = 16384,
                                  ReadGuard* guard = nullptr);
OrderedJson bpb_result_json(const BpbResult& result);

// CORE over the bundle (DATA/eval_bundle); options.read_guard, when set, admits every file read.
CoreResult evaluate_checkpoint_core(EvalCheckpoint& checkpoint, const std::filesystem::path& bundle_dir,
                                    const CoreOptions& options);

}  // namespace ct
