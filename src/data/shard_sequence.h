#pragma once
// Cuts one split's token stream into shards of a fixed size (the last one shorter), as llm.c does:
// documents run on across shard boundaries, and a shard counts the documents whose first token
// (their <|bos|>) it holds. Shards are named <split>_000.bin, <split>_001.bin, ...
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "data/manifest.h"

namespace ct {

class ShardSequence {
 public:
  ShardSequence(std::filesystem::path folder, std::string split, int64_t shard_tokens, int shard_version);

  // Appends one document's tokens (its <|bos|> first); full shards are written as they fill.
  void append_document(std::span<const int32_t> tokens);
  // Writes the last, partial shard; returns the records of every shard written, in order.
  std::vector<ShardRecord> finish();

  int64_t tokens() const { return total_tokens_; }
  int64_t documents() const { return total_documents_; }

 private:
  void write_current();
  std::filesystem::path folder_;
  std::string split_;
  int64_t shard_tokens_;
  int shard_version_;
  std::vector<int32_t> current_;
  int64_t current_documents_ = 0;
  int64_t total_tokens_ = 0, total_documents_ = 0;
  std::vector<ShardRecord> written_;
};

// "<split>_<index, 3 digits or more>.bin"
std::string shard_file_name(const std::string& split, size_t index);

}  // namespace ct
