#pragma once
// The prepared data of `clocktrain run`: the tokenizer and the token shards, made from the training
// corpus only and cached by content, so that a second run with the same inputs skips preparation.
//
// The cache key is the SHA-256 of: every corpus file (its name, size and content SHA-256), the
// preparation settings (shard and held-out token counts) and the tokenizer settings (vocabulary
// size, special tokens). CACHE/<key>/ holds what `clocktrain data prepare` writes (manifest.json,
// train_NNN.bin, heldout_NNN.bin, tokenizer/) plus prepared.json: the key's inputs and a copy of the
// manifest as it was prepared. That copy is the run's pin: a folder is reused only when its
// manifest.json, tokenizer and every shard's size and header match it (data/prepared_folder.h
// verify_prepared_folder), else it is moved aside and prepared again, saying why; the trainer's
// loader checks each shard's SHA-256 when it reads it, and the gate compares the shards the trainer
// read against the pin (the `data` check).
//
// Preparation reads DATA/corpus and nothing else: never DATA/val or DATA/eval_bundle (a corpus
// folder or file that resolves into them is refused), so no validation shards are made and the
// trainer has none it could open. It is written into a staging folder and renamed into place whole.
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

#include "data/manifest.h"
#include "util/json.h"

namespace ct {

inline constexpr const char* kPreparedRecordFileName = "prepared.json";
inline constexpr const char* kDefaultCacheDir = "runs/cache";

struct DataCacheSettings {
  std::filesystem::path data_dir;                     // the shipped data: corpus/ (and val/, eval_bundle/, never read here)
  std::filesystem::path cache_dir = kDefaultCacheDir;
  int32_t vocab_size = 8192;                          // the tokenizer's, = the recipe's model.vocab_size
  int64_t shard_tokens = 10'000'000;                  // the preparation's settings (part of the cache key)
  int64_t heldout_tokens = 1'000'000;
  int threads = 0;                                    // 0 = every available core
  bool progress = true;
};

struct PreparedData {
  std::filesystem::path dir;  // CACHE/<key>: a prepared data folder for the trainer
  std::string key;            // SHA-256 of key_inputs
  Json key_inputs;            // what the key hashes
  bool reused = false;        // found in the cache
  Manifest pinned;            // the manifest as prepared (prepared.json), the gate's pin
  std::string pinned_manifest_sha256;
  double seconds = 0;         // spent here (hashing the corpus, and preparing when not cached)
};

// What the key hashes, from the corpus as it is now (every file hashed). Errors name the file.
Json data_cache_key_inputs(const DataCacheSettings& settings);

// Finds CACHE/<key> and checks it against its pin, or (absent or damaged) trains the tokenizer and
// prepares the shards into it. Lines of what it did go to `log`.
PreparedData ensure_prepared_data(const DataCacheSettings& settings, std::ostream& log);

}  // namespace ct
