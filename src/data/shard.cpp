#include "data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "util/error.h"
#include "util/files.h"
#include "util/sha256.h"

namespace ct {

int shard_version_for_vocab(int64_t vocab_size) {
  check(vocab_size > 0, "shard: vocab size must be positive, got ", vocab_size);
  return vocab_size <= 65536 ? 1 : 2;
}

size_t shard_token_bytes(int version) {
  if (version == 1) return 2;
  if (version == 2) return 4;
  fail("shard: unsupported version ", version, " (expected 1 = uint16 tokens or 2 = uint32 tokens)");
}

namespace {

template <typename Word>
void write_tokens_as(AtomicWriter& writer, Sha256& hash, std::span<const int32_t> tokens,
                     const std::filesystem::path& path) {
  constexpr int64_t kMax = static_cast<int64_t>(std::numeric_limits<Word>::max());
  std::vector<Word> block(1 << 16);
  for (size_t start = 0; start < tokens.size(); start += block.size()) {
    size_t n = std::min(block.size(), tokens.size() - start);
    for (size_t i = 0; i < n; ++i) {
      int32_t id = tokens[start + i];
      if (id < 0 || static_cast<int64_t>(id) > kMax) {  // (not check(): its message would be built per token)
        fail(path.string(), ": token ", start + i, " is ", id, ", which does not fit a ", sizeof(Word) * 8,
             "-bit shard");
      }
      block[i] = static_cast<Word>(id);
    }
    writer.write(block.data(), n * sizeof(Word));
    hash.update(block.data(), n * sizeof(Word));
  }
}

// A plain max reduction, which GCC and clang vectorise (vpmaxuw / vpmaxud).
template <typename Word>
Word largest_of(const Word* words, size_t count) {
  Word largest = 0;
  for (size_t i = 0; i < count; ++i) largest = std::max(largest, words[i]);
  return largest;
}

template <typename Word>
int64_t first_at_or_above(const Word* words, int64_t count, int64_t limit) {
  // Blocks of 64 Ki tokens (128 or 256 KiB, in L2): a block is read once more only when it holds
  // the id searched for.
  constexpr int64_t kBlockTokens = int64_t{1} << 16;
  for (int64_t start = 0; start < count; start += kBlockTokens) {
    const int64_t n = std::min(kBlockTokens, count - start);
    if (static_cast<int64_t>(largest_of(words + start, static_cast<size_t>(n))) < limit) continue;
    for (int64_t i = start;; ++i)
      if (static_cast<int64_t>(words[i]) >= limit) return i;
  }
  return -1;
}

}  // namespace

WrittenShard write_shard(const std::filesystem::path& path, std::span<const int32_t> tokens, int version) {
  size_t token_bytes = shard_token_bytes(version);
  check(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()), path.string(), ": ",
        tokens.size(), " tokens do not fit the header's int32 count");
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = version;
  header[2] = static_cast<int32_t>(tokens.size());
  AtomicWriter writer(path);
  Sha256 hash;
  writer.write(header, sizeof(header));
  hash.update(header, sizeof(header));
  if (token_bytes == 2) {
    write_tokens_as<uint16_t>(writer, hash, tokens, path);
  } else {
    write_tokens_as<uint32_t>(writer, hash, tokens, path);
  }
  WrittenShard result{static_cast<int64_t>(tokens.size()), writer.bytes_written(), hash.hex_digest()};
  writer.commit();
  return result;
}

ShardFile ShardFile::open(const std::filesystem::path& path) {
  ShardFile shard;
  shard.path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  check(fd >= 0, path.string(), ": cannot open shard: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path.string(), ": cannot stat shard: ", std::strerror(errno));
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size < kShardHeaderBytes) {
    ::close(fd);
    fail(path.string(), ": ", size, " bytes: too short for the ", kShardHeaderBytes, "-byte shard header");
  }
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  check(mapped != MAP_FAILED, path.string(), ": cannot map shard: ", std::strerror(errno));
  shard.data_ = static_cast<const uint8_t*>(mapped);
  shard.size_ = size;

  int32_t header[3];
  std::memcpy(header, shard.data_, sizeof(header));
  check(header[0] == kShardMagic, path.string(), ": byte 0: expected magic ", kShardMagic,
        " (an llm.c token shard), got ", header[0]);
  check(header[1] == 1 || header[1] == 2, path.string(), ": byte 4: unsupported version ", header[1],
        " (expected 1 = uint16 tokens or 2 = uint32 tokens)");
  check(header[2] >= 0, path.string(), ": byte 8: negative token count ", header[2]);
  shard.version_ = header[1];
  shard.token_bytes_ = shard_token_bytes(shard.version_);
  shard.token_count_ = header[2];
  uint64_t expected = kShardHeaderBytes + static_cast<uint64_t>(shard.token_count_) * shard.token_bytes_;
  check(expected == size, path.string(), ": the header (byte 8) counts ", shard.token_count_, " tokens of ",
        shard.token_bytes_, " bytes, so the file should be ", expected, " bytes, but it is ", size,
        size < expected ? " (truncated)" : " (trailing bytes)");
  return shard;
}

ShardFile::~ShardFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

ShardFile::ShardFile(ShardFile&& other) noexcept { *this = std::move(other); }

ShardFile& ShardFile::operator=(ShardFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    version_ = other.version_;
    token_count_ = other.token_count_;
    token_bytes_ = other.token_bytes_;
  }
  return *this;
}

int32_t ShardFile::token(int64_t index) const {
  int32_t value;
  copy_tokens(index, 1, &value);
  return value;
}

void ShardFile::copy_tokens(int64_t start, int64_t count, int32_t* out) const {
  if (start < 0 || count < 0 || start + count > token_count_) {
    fail(path_.string(), ": tokens [", start, ", ", start + count, ") lie outside the shard's ", token_count_,
         " tokens");
  }
  const uint8_t* base = data_ + kShardHeaderBytes;
  if (token_bytes_ == 2) {
    const auto* words = reinterpret_cast<const uint16_t*>(base) + start;
    for (int64_t i = 0; i < count; ++i) out[i] = words[i];
  } else {
    const auto* words = reinterpret_cast<const uint32_t*>(base) + start;
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(words[i]);
  }
}

int64_t ShardFile::first_token_at_or_above(int64_t limit) const {
  const uint8_t* base = data_ + kShardHeaderBytes;
  if (token_bytes_ == 2) return first_at_or_above(reinterpret_cast<const uint16_t*>(base), token_count_, limit);
  return first_at_or_above(reinterpret_cast<const uint32_t*>(base), token_count_, limit);
}

}  // namespace ct
