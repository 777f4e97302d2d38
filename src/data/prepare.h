#pragma once
// Data preparation (docs/data.md): the training corpus and the validation documents of a data
// folder, tokenized into shards with a manifest.
//
//   DATA/corpus/*  -> train_NNN.bin   every training document, <|bos|> before each,
//                  -> heldout_NNN.bin a slice of whole training documents that never reach a train
//                                     shard (the trainer's periodic loss: it may not read val/);
//   DATA/val/*     -> val_NNN.bin     the pinned validation documents, for the evaluator only.
//
// Documents are encoded in parallel and written in corpus order, so the output is byte-identical
// for the same input and settings whatever the thread count. Everything is written into a staging
// folder inside OUT and moved into place only when all of it succeeded: a failure leaves OUT as it was.
#include <cstdint>
#include <filesystem>
#include <string>

#include "data/manifest.h"
#include "data/text_encoder.h"

namespace ct {

struct PrepareSettings {
  std::filesystem::path data_dir;  // holds corpus/ (training) and val/ (validation; optional)
  std::filesystem::path out_dir;
  int64_t shard_tokens = 10'000'000;
  int64_t heldout_tokens = 1'000'000;  // at least this many tokens of whole documents; 0: no held-out slice
  int threads = 0;                     // 0: every available core
  bool progress = true;                // a progress line when stderr is a terminal
  int64_t batch_bytes = 16 << 20;      // text read per parallel batch (bounds memory)
  std::string text_column = "text";    // the text column of Parquet files
};

struct PrepareReport {
  Manifest manifest;
  std::string manifest_sha256;
  double seconds = 0;
  uint64_t text_bytes = 0;  // uncompressed corpus + val bytes read
  int64_t tokens = 0;       // over all splits
  int threads = 0;
};

PrepareReport prepare_data(const PrepareSettings& settings, const TextEncoder& encoder);

// Held-out documents are every `stride`-th document of the corpus (index % stride == stride - 1),
// taken while the slice holds fewer than the requested tokens. The stride spreads the slice over
// about the first half of the corpus, from a first pass that counts documents and bytes and an
// estimate of 4 bytes per token (the estimate only moves which documents are chosen).
int64_t heldout_stride(int64_t corpus_documents, uint64_t corpus_bytes, int64_t heldout_tokens);

}  // namespace ct
