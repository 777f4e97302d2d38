#include "data/shard_sequence.h"

#include <cstdio>

#include "data/shard.h"
#include "util/error.h"

namespace ct {

std::string shard_file_name(const std::string& split, size_t index) {
  char digits[32];
  std::snprintf(digits, sizeof(digits), "%03zu", index);
  return split + "_" + digits + ".bin";
}

ShardSequence::ShardSequence(std::filesystem::path folder, std::string split, int64_t shard_tokens,
                             int shard_version)
    : folder_(std::move(folder)), split_(std::move(split)), shard_tokens_(shard_tokens), shard_version_(shard_version) {
  check(shard_tokens_ > 0 && shard_tokens_ <= std::numeric_limits<int32_t>::max(),
        "shard size: expected 1 to 2147483647 tokens per shard, got ", shard_tokens_);
}

void ShardSequence::append_document(std::span<const int32_t> tokens) {
  if (tokens.empty()) return;
  ++total_documents_;
  total_tokens_ += static_cast<int64_t>(tokens.size());
  bool first = true;
  while (!tokens.empty()) {
    if (first) ++current_documents_;
    first = false;
    size_t room = static_cast<size_t>(shard_tokens_) - current_.size();
    size_t take = std::min(room, tokens.size());
    current_.insert(current_.end(), tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(take));
    tokens = tokens.subspan(take);
    if (static_cast<int64_t>(current_.size()) == shard_tokens_) write_current();
  }
}

void ShardSequence::write_current() {
  ShardRecord record;
  record.name = shard_file_name(split_, written_.size());
  record.split = split_;
  WrittenShard shard = write_shard(folder_ / record.name, current_, shard_version_);
  record.tokens = shard.tokens;
  record.documents = current_documents_;
  record.bytes = shard.bytes;
  record.sha256 = shard.sha256;
  written_.push_back(std::move(record));
  current_.clear();
  current_documents_ = 0;
}

std::vector<ShardRecord> ShardSequence::finish() {
  if (!current_.empty()) write_current();
  return written_;
}

}  // namespace ct
