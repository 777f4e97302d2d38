#pragma once
// The inside of a Tokenizer, shared by the encoder (tokenizer.cpp), the files (tokenizer_files.cpp)
// and the trainer (bpe_trainer.cpp).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/flat_hash.h"
#include "text/tokenizer.h"

namespace ct {

struct Tokenizer::Impl {
  // Ids 0..rank_bytes.size()-1 are the mergeable tokens (id == rank); the special tokens follow.
  std::vector<std::string> rank_bytes;
  std::vector<std::string> special_names;  // special_names[i] has id rank_bytes.size() + i
  std::array<int32_t, 256> byte_id{};      // the id of each single byte

  // bytes -> rank, for whole-chunk lookups: open addressing on hash_bytes; a slot holds the hash's
  // high 32 bits (a fingerprint that rejects almost every mismatch without touching the bytes)
  // and rank + 1 in the low 32 bits; 0 = empty.
  std::vector<uint64_t> rank_slots;
  // (left id, right id) -> rank of the token whose bytes are their concatenation, when one exists.
  // This is tiktoken's rule (merge the adjacent parts whose concatenation has the lowest rank)
  // expressed on ids, so encoding never hashes byte strings inside a chunk.
  text_detail::U64Map<int32_t> merged_rank{16};

  uint64_t instance_id = 0;  // distinguishes tokenizers in the per-thread encoding caches

  // Builds the lookup tables; `where` prefixes errors (e.g. the file name).
  // Requires: distinct non-empty token bytes, every single byte present, no special name repeated.
  static std::unique_ptr<Impl> build(std::vector<std::string> rank_bytes,
                                     std::vector<std::string> special_names, const std::string& where);

  int32_t rank_of(std::string_view bytes) const;  // -1 when no token has these bytes
  int32_t rank_of_hashed(std::string_view bytes, uint64_t hash) const;  // the same, given hash_bytes
  int32_t num_ranks() const { return static_cast<int32_t>(rank_bytes.size()); }
  int32_t vocab_size() const { return num_ranks() + static_cast<int32_t>(special_names.size()); }

  // Encodes one pre-tokenized chunk, appending ids.
  void encode_chunk(std::string_view chunk, std::vector<int32_t>& out) const;
  void encode_chunk_uncached(std::string_view chunk, std::vector<int32_t>& out) const;

  // The canonical file contents (what save() writes, and what sha256() hashes).
  std::string tiktoken_text() const;
  std::string json_text() const;
};

}  // namespace ct
