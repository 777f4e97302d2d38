#pragma once
// Byte-level BPE training (docs/formats.md). Documents stream in through add_document(); batches of them
// are pre-tokenized and their chunks counted in the background (in parallel, OpenMP) while the
// caller reads the next documents. train() then starts
// from the 256 byte tokens and repeatedly merges the most frequent adjacent pair of tokens within
// chunks, giving the merges ranks 256, 257, ...; the special tokens (<|bos|> first) follow.
//
// Pair counts count every adjacent position, overlapping ones included ("aaa" holds (a, a) twice),
// and a merge replaces occurrences left to right. Ties: among pairs of equal count, the pair with
// the smallest (left id, right id) wins. The result depends only on the multiset of chunks, so it is
// the same whatever the thread count or batching.
//
// The merges are incremental: each unique chunk is stored once with its count; a merge visits only
// the chunks that hold the pair (an index from pair to chunks) and updates the counts of the pairs
// around each occurrence; the best pair comes from a max-heap whose stale entries are re-checked
// when they surface (counts of existing pairs only ever fall).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace ct {

struct BpeTrainerOptions {
  int32_t vocab_size = 8192;  // in total: 256 bytes + merges + special tokens
  std::vector<std::string> special_tokens{"<|bos|>"};  // <|bos|> must come first
  // Caps, counted in characters (code points; an invalid UTF-8 byte counts as one), as nanochat's
  // tok_train counts them. 0 = no cap. doc_cap keeps the start of each document; max_chars stops
  // reading once that many characters were taken, cutting the last document to fit.
  int64_t doc_cap = 0;
  int64_t max_chars = 0;
  int threads = 0;  // 0 = all available cores
  // Work sizes; only the speed depends on them. Documents are counted in batches of about
  // batch_bytes, cut into pieces of about piece_bytes that the threads share.
  size_t batch_bytes = size_t{32} << 20;
  size_t piece_bytes = size_t{1} << 20;
};

struct BpeTrainingStats {
  int64_t documents = 0;
  int64_t chars = 0;   // characters taken, after the caps
  int64_t bytes = 0;   // their UTF-8 bytes
  int64_t chunks = 0;  // pre-tokenized chunks
  int64_t unique_chunks = 0;
  int32_t merges = 0;
  int32_t reused_tokens = 0;  // merges whose bytes were already a token (see bpe_trainer.cpp)
  // Wall seconds: pre-tokenizing and counting (in the background, overlapping the reading of
  // documents); inside train(), waiting for the counting to end and combining the counts; merging.
  double count_seconds = 0;
  double wait_seconds = 0;
  double merge_seconds = 0;
};

class BpeTrainer {
 public:
  explicit BpeTrainer(BpeTrainerOptions options);
  ~BpeTrainer();
  BpeTrainer(const BpeTrainer&) = delete;
  BpeTrainer& operator=(const BpeTrainer&) = delete;

  // Takes one document (copied). Returns false once max_chars is reached: later documents are
  // ignored, so a reader can stop.
  bool add_document(std::string_view text);

  // Called during train() after each merge with (merges done, merges to do).
  using Progress = std::function<void(int32_t, int32_t)>;
  // Runs the merges. Throws ct::Error if the options are invalid or the text has too few distinct
  // pairs to reach vocab_size. Call once.
  Tokenizer train(const Progress& progress = nullptr);

  const BpeTrainingStats& stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ct
