#pragma once
// Token shards in the llm.c / modded-nanogpt layout (docs/formats.md): a header of 256 little-endian int32
// (magic 20240520, version, token count, then zeros) followed by the tokens, uint16 in version 1
// (vocab <= 65536) and uint32 in version 2. Readers map the file and check magic, version and that
// its length is exactly header + count * token size.
#include <bit>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace ct {

static_assert(std::endian::native == std::endian::little, "shards are little-endian; add byte swaps for this host");

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr size_t kShardHeaderInts = 256;
inline constexpr size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);

// Version 1 (uint16 tokens) when every id fits, else version 2 (uint32 tokens).
int shard_version_for_vocab(int64_t vocab_size);
size_t shard_token_bytes(int version);  // 2 or 4; an error for any other version

struct WrittenShard {
  int64_t tokens = 0;
  uint64_t bytes = 0;
  std::string sha256;  // of the whole file, header included
};

// Writes one shard atomically (util/files.h AtomicWriter). Every id must fit the version's width;
// an error names the path and the index of the first one that does not.
WrittenShard write_shard(const std::filesystem::path& path, std::span<const int32_t> tokens, int version);

// A shard mapped read-only. Move-only; the mapping lives as long as the object.
class ShardFile {
 public:
  // Maps and validates; errors name the path and the byte offset of the field that is wrong.
  static ShardFile open(const std::filesystem::path& path);

  ShardFile() = default;
  ~ShardFile();
  ShardFile(ShardFile&& other) noexcept;
  ShardFile& operator=(ShardFile&& other) noexcept;
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  int version() const { return version_; }
  int64_t token_count() const { return token_count_; }
  size_t token_bytes() const { return token_bytes_; }
  int32_t token(int64_t index) const;
  // Copies tokens [start, start + count) as int32; an error if the range leaves the shard.
  void copy_tokens(int64_t start, int64_t count, int32_t* out) const;
  // The index of the first token whose id is >= limit, or -1 when there is none: one pass over the
  // mapped tokens, a vectorised max per block, and a search only inside a block whose max is too large.
  int64_t first_token_at_or_above(int64_t limit) const;
  // The whole file as mapped, header included (for hashing).
  std::span<const uint8_t> file_bytes() const { return {data_, size_}; }

 private:
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int version_ = 0;
  int64_t token_count_ = 0;
  size_t token_bytes_ = 0;
};

}  // namespace ct
