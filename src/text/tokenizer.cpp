// Encoding and decoding (tiktoken semantics), and the lookup tables behind them.
#include "text/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <cstring>
#include <queue>

#include "text/pretokenizer.h"
#include "text/tokenizer_impl.h"
#include "util/error.h"

namespace ct {

using text_detail::hash_bytes;
using text_detail::pair_key;

namespace {

std::atomic<uint64_t> next_instance_id{1};

constexpr int32_t kNoMerge = INT32_MAX;

// A per-thread, direct-mapped cache of chunk -> ids for chunks that are not one token. Words recur
// constantly in text, and a hit costs one hash and one compare instead of a BPE run. Being per
// thread keeps encode() lock-free; the owner id empties it when another tokenizer uses the thread.
struct EncodeCache {
  static constexpr size_t kSlots = 1 << 15;
  static constexpr size_t kMaxKeyBytes = 22;
  static constexpr size_t kMaxIds = 8;
  struct Entry {
    uint8_t key_length;
    uint8_t num_ids;
    char key[kMaxKeyBytes];
    int32_t ids[kMaxIds];
  };
  uint64_t owner = 0;
  // Tags (the chunk's hash, made odd so that 0 means empty) apart from the entries: a miss, the
  // common case for a new word, touches one small array only.
  std::vector<uint64_t> tags;
  std::vector<Entry> entries;

  size_t index_for(uint64_t owner_id, uint64_t hash) {
    if (owner != owner_id) {
      tags.assign(kSlots, 0);
      entries.resize(kSlots);
      owner = owner_id;
    }
    return (hash >> 24) & (kSlots - 1);
  }
};

thread_local EncodeCache encode_cache;

}  // namespace

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::build(std::vector<std::string> rank_bytes,
                                                        std::vector<std::string> special_names,
                                                        const std::string& where) {
  auto impl = std::make_unique<Impl>();
  impl->rank_bytes = std::move(rank_bytes);
  impl->special_names = std::move(special_names);
  impl->instance_id = next_instance_id.fetch_add(1);
  const int32_t n = impl->num_ranks();

  const size_t capacity = std::bit_ceil(std::max<size_t>(16, size_t(n) * 2));
  impl->rank_slots.assign(capacity, 0);
  for (int32_t rank = 0; rank < n; ++rank) {
    const std::string& bytes = impl->rank_bytes[rank];
    check(!bytes.empty(), where, ": rank ", rank, ": a token has no bytes");
    check(impl->rank_of(bytes) < 0, where, ": rank ", rank, ": the same bytes as rank ", impl->rank_of(bytes),
          " (every token must be distinct)");
    const uint64_t h = hash_bytes(bytes);
    size_t i = h & (capacity - 1);
    while (impl->rank_slots[i] != 0) i = (i + 1) & (capacity - 1);
    impl->rank_slots[i] = (h & 0xffffffff00000000ULL) | static_cast<uint32_t>(rank + 1);
  }
  for (int b = 0; b < 256; ++b) {
    impl->byte_id[b] = impl->rank_of(std::string_view(reinterpret_cast<const char*>(&b), 1));
    check(impl->byte_id[b] >= 0, where, ": no token for the single byte ", b,
          " (all 256 bytes must be tokens, so that any text can be encoded)");
  }
  // Every split of every token whose two halves are tokens: (left, right) -> rank. Only splits where
  // both halves have the length of some token can qualify; trying just those keeps loading linear in
  // practice. (Trying every split costs O(length^2) hashing per token: a file with one 1 MB token
  // took half an hour to load.)
  std::vector<size_t> token_lengths;
  for (const std::string& bytes : impl->rank_bytes) token_lengths.push_back(bytes.size());
  std::sort(token_lengths.begin(), token_lengths.end());
  token_lengths.erase(std::unique(token_lengths.begin(), token_lengths.end()), token_lengths.end());
  auto is_token_length = [&](size_t length) {
    return std::binary_search(token_lengths.begin(), token_lengths.end(), length);
  };
  impl->merged_rank = text_detail::U64Map<int32_t>(size_t(n) * 2);
  for (int32_t rank = 0; rank < n; ++rank) {
    std::string_view bytes = impl->rank_bytes[rank];
    for (size_t k : token_lengths) {
      if (k >= bytes.size()) break;
      if (!is_token_length(bytes.size() - k)) continue;
      int32_t left = impl->rank_of(bytes.substr(0, k)), right = impl->rank_of(bytes.substr(k));
      if (left >= 0 && right >= 0) impl->merged_rank.get_or_insert(pair_key(left, right), rank);
    }
  }
  for (size_t i = 0; i < impl->special_names.size(); ++i) {
    check(!impl->special_names[i].empty(), where, ": special token ", i, " has an empty name");
    for (size_t j = 0; j < i; ++j)
      check(impl->special_names[i] != impl->special_names[j], where, ": special token '",
            impl->special_names[i], "' appears twice");
  }
  return impl;
}

int32_t Tokenizer::Impl::rank_of_hashed(std::string_view bytes, uint64_t h) const {
  const size_t mask = rank_slots.size() - 1;
  const uint64_t fingerprint = h & 0xffffffff00000000ULL;
  for (size_t i = h & mask; rank_slots[i] != 0; i = (i + 1) & mask) {
    if ((rank_slots[i] & 0xffffffff00000000ULL) != fingerprint) continue;
    const auto rank = static_cast<int32_t>(static_cast<uint32_t>(rank_slots[i])) - 1;
    if (text_detail::bytes_equal(rank_bytes[rank], bytes)) return rank;
  }
  return -1;
}

int32_t Tokenizer::Impl::rank_of(std::string_view bytes) const { return rank_of_hashed(bytes, hash_bytes(bytes)); }

// tiktoken's byte-pair merge: start from single bytes; repeatedly merge the adjacent pair whose
// concatenation is the token of lowest rank (the leftmost such pair on ties: the same token can
// occur twice), until no adjacent pair forms a token.
void Tokenizer::Impl::encode_chunk_uncached(std::string_view chunk, std::vector<int32_t>& out) const {
  const auto* s = reinterpret_cast<const uint8_t*>(chunk.data());
  const size_t n = chunk.size();
  auto rank_of_pair = [&](int32_t left, int32_t right) {
    const int32_t* r = merged_rank.find(pair_key(left, right));
    return r ? *r : kNoMerge;
  };
  constexpr size_t kShortChunk = 96;
  if (n <= kShortChunk) {
    // Quadratic in the chunk length but with tiny constants: arrays of ids and of pair ranks.
    int32_t ids[kShortChunk], ranks[kShortChunk];
    size_t m = n;
    for (size_t i = 0; i < n; ++i) ids[i] = byte_id[s[i]];
    for (size_t i = 0; i + 1 < m; ++i) ranks[i] = rank_of_pair(ids[i], ids[i + 1]);
    while (m > 1) {
      size_t best = 0;
      for (size_t i = 1; i + 1 < m; ++i)
        if (ranks[i] < ranks[best]) best = i;
      if (ranks[best] == kNoMerge) break;
      ids[best] = ranks[best];
      // Drop ids[best + 1] and the pair rank that started at best + 1.
      std::memmove(ids + best + 1, ids + best + 2, (m - best - 2) * sizeof(int32_t));
      if (best + 2 < m) std::memmove(ranks + best + 1, ranks + best + 2, (m - best - 3) * sizeof(int32_t));
      --m;
      if (best > 0) ranks[best - 1] = rank_of_pair(ids[best - 1], ids[best]);
      if (best + 1 < m) ranks[best] = rank_of_pair(ids[best], ids[best + 1]);
    }
    out.insert(out.end(), ids, ids + m);
    return;
  }
  // Long chunks (long runs of letters, spaces or symbols): a linked list of parts and a min-heap of
  // candidate merges keyed (rank, start offset), so the leftmost lowest rank wins, as above.
  // Entries go stale when a neighbour merges; they are checked when popped.
  std::vector<int32_t> ids(n), next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = byte_id[s[i]];
    next[i] = static_cast<int32_t>(i + 1);
    prev[i] = static_cast<int32_t>(i) - 1;
  }
  struct Candidate {
    int32_t rank, left, right;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push = [&](int32_t left, int32_t right) {
    if (left < 0 || right >= static_cast<int32_t>(n)) return;
    int32_t r = rank_of_pair(ids[left], ids[right]);
    if (r != kNoMerge) heap.push({r, left, right});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i), static_cast<int32_t>(i + 1));
  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right ||
        rank_of_pair(ids[c.left], ids[c.right]) != c.rank)
      continue;
    ids[c.left] = c.rank;
    alive[c.right] = false;
    next[c.left] = next[c.right];
    if (next[c.right] < static_cast<int32_t>(n)) prev[next[c.right]] = c.left;
    push(prev[c.left], c.left);
    push(c.left, next[c.left]);
  }
  for (int32_t i = 0; i < static_cast<int32_t>(n); i = next[i]) out.push_back(ids[i]);
}

void Tokenizer::Impl::encode_chunk(std::string_view chunk, std::vector<int32_t>& out) const {
  if (chunk.size() == 1) {
    out.push_back(byte_id[static_cast<uint8_t>(chunk[0])]);
    return;
  }
  // A whole chunk that is a token is that token (tiktoken does the same).
  const uint64_t h = hash_bytes(chunk);
  if (const int32_t rank = rank_of_hashed(chunk, h); rank >= 0) {
    out.push_back(rank);
    return;
  }
  if (chunk.size() > EncodeCache::kMaxKeyBytes) {
    encode_chunk_uncached(chunk, out);
    return;
  }
  const size_t index = encode_cache.index_for(instance_id, h);
  const uint64_t tag = h | 1;
  EncodeCache::Entry& entry = encode_cache.entries[index];
  if (encode_cache.tags[index] == tag && entry.key_length == chunk.size() &&
      std::memcmp(entry.key, chunk.data(), chunk.size()) == 0) {
    out.insert(out.end(), entry.ids, entry.ids + entry.num_ids);
    return;
  }
  const size_t start = out.size();
  encode_chunk_uncached(chunk, out);
  const size_t num_ids = out.size() - start;
  if (num_ids <= EncodeCache::kMaxIds) {
    encode_cache.tags[index] = tag;
    entry.key_length = static_cast<uint8_t>(chunk.size());
    entry.num_ids = static_cast<uint8_t>(num_ids);
    std::memcpy(entry.key, chunk.data(), chunk.size());
    std::memcpy(entry.ids, out.data() + start, num_ids * sizeof(int32_t));
  }
}

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

static const Tokenizer::Impl& require(const std::unique_ptr<Tokenizer::Impl>& impl) {
  check(impl != nullptr, "tokenizer: used before it was loaded or trained");
  return *impl;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  encode_append(text, ids);
  return ids;
}

void Tokenizer::encode_append(std::string_view text, std::vector<int32_t>& out) const {
  const Impl& impl = require(impl_);
  pretokenize(text, [&](std::string_view chunk) { impl.encode_chunk(chunk, out); });
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  const Impl& impl = require(impl_);
  std::string text;
  const int32_t n = impl.num_ranks(), vocab = impl.vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    check(id >= 0 && id < vocab, "decode: id ", id, " at position ", i, " is outside the vocabulary [0, ",
          vocab, ")");
    text += id < n ? impl.rank_bytes[id] : impl.special_names[id - n];
  }
  return text;
}

std::string Tokenizer::token_bytes_of(int32_t id) const {
  const Impl& impl = require(impl_);
  check(id >= 0 && id < impl.vocab_size(), "token_bytes_of: id ", id, " is outside the vocabulary [0, ",
        impl.vocab_size(), ")");
  return id < impl.num_ranks() ? impl.rank_bytes[id] : std::string();
}

int32_t Tokenizer::vocab_size() const { return require(impl_).vocab_size(); }

int32_t Tokenizer::bos_id() const {
  int32_t id = special_id("<|bos|>");
  check(id >= 0, "tokenizer: has no <|bos|> special token");
  return id;
}

int32_t Tokenizer::special_id(std::string_view name) const {
  const Impl& impl = require(impl_);
  for (size_t i = 0; i < impl.special_names.size(); ++i)
    if (impl.special_names[i] == name) return impl.num_ranks() + static_cast<int32_t>(i);
  return -1;
}

std::vector<int32_t> Tokenizer::token_bytes() const {
  const Impl& impl = require(impl_);
  std::vector<int32_t> sizes(impl.vocab_size(), 0);
  for (int32_t id = 0; id < impl.num_ranks(); ++id) sizes[id] = static_cast<int32_t>(impl.rank_bytes[id].size());
  return sizes;
}

}  // namespace ct
