#pragma once
// val_bpb (docs/eval.md): bits per byte of the pinned validation documents.
//
// The documents are tokenized with BOS in front of each and concatenated into one stream. Row r
// holds stream[r*T, r*T + T + 1) (T = sequence_len), so inputs = row[:-1] and targets = row[1:] and
// every token after the first is a target exactly once; the last row may be shorter, which is the
// same as padding it with target -1 for a causal model. For each target t with token_bytes[t] > 0:
//   nats  += loss (natural-log cross-entropy of predicting t),   bytes += token_bytes[t];
// val_bpb = nats / (ln 2 * bytes). Sums are float64, accumulated row by row and position by
// position, so neither the rows per scorer call nor the thread count changes the result.
// The same sums per document: a target belongs to the document whose tokens hold it (its BOS
// starts the document), whatever row it sits in; the parts add up to the whole.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data/text_encoder.h"
#include "eval/sequence_scorer.h"

namespace ct {

// The text of every document of a corpus file or folder (docs/formats.md "Raw text"), in corpus order;
// `names`, when given, gets each document's name for reports: its "id" field where that is a
// string, else "file:line".
std::vector<std::string> read_documents(const std::filesystem::path& dir_or_file,
                                        std::vector<std::string>* names = nullptr);

// BOS + tokens of each document, concatenated (tokenized in parallel; the order is the documents').
// `starts`, when given, gets the stream position of each document's BOS.
std::vector<int32_t> tokenize_documents(const std::vector<std::string>& documents, const TextEncoder& encoder,
                                        std::vector<int64_t>* starts = nullptr);

struct BpbOptions {
  int64_t sequence_len = 0;        // T; 0 = the scorer's context_length()
  int64_t max_target_tokens = 0;   // evaluate only the first N targets (stream[0, N+1)); 0 = all
  int64_t rows_per_call = 8;       // rows handed to the scorer at once (does not change the result)
  // Called after each scorer call: (targets done, targets in all).
  std::function<void(int64_t, int64_t)> progress;
  // Stream positions where the documents start (tokenize_documents' `starts`; increasing, the first
  // 0). Empty: no per-document sums.
  std::vector<int64_t> document_starts;
};

// The sums of one document's targets.
struct BpbPart {
  int64_t document = 0;       // its index in options.document_starts
  std::string name;           // filled by the caller that knows the documents' names
  double nats = 0;
  int64_t bytes = 0;
  int64_t counted_targets = 0;
  double bpb() const;         // nats / (ln 2 * bytes); NaN when no byte was counted
};

struct BpbResult {
  double nats = 0;            // summed cross-entropy over the counted targets
  int64_t bytes = 0;          // summed token_bytes over the counted targets
  int64_t targets = 0;        // every target position evaluated
  int64_t counted_targets = 0;  // those with token_bytes > 0 (special tokens excluded)
  int64_t rows = 0;
  int64_t sequence_len = 0;
  double bpb = 0;             // nats / (ln 2 * bytes)
  double seconds = 0;
  // One part per document of options.document_starts that has a counted target (with a token cap,
  // the documents the cap reaches), in document order.
  std::vector<BpbPart> documents;
};

// val_bpb of a token stream. token_bytes[id] = UTF-8 bytes of id's decoding, 0 for special tokens
// (Tokenizer::token_bytes()); every token of the stream must be a valid index into it.
BpbResult evaluate_bpb(const std::vector<int32_t>& stream, const std::vector<int32_t>& token_bytes,
                       SequenceScorer& scorer, const BpbOptions& options);

}  // namespace ct
