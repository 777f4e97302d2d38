#pragma once
// Counts distinct byte strings (pre-tokenized chunks): an open-addressing table over an arena that
// holds each distinct chunk once. One per thread while counting, merged afterwards.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/flat_hash.h"

namespace ct::text_detail {

class ChunkCounter {
 public:
  ChunkCounter() { entries_.resize(1 << 12); }

  void add(std::string_view chunk, int64_t count = 1) { add_hashed(chunk, hash_bytes(chunk), count); }

  // Adds every chunk of `other` with its count.
  void merge_from(const ChunkCounter& other) {
    for (const Entry& e : other.entries_)
      if (e.count) add_hashed(other.view(e), e.hash, e.count);
  }

  size_t size() const { return size_; }
  uint64_t distinct_bytes() const { return arena_.size(); }

  // f(std::string_view chunk, int64_t count) for every distinct chunk (in table order).
  template <typename F>
  void for_each(F&& f) const {
    for (const Entry& e : entries_)
      if (e.count) f(view(e), e.count);
  }

 private:
  struct Entry {
    uint64_t hash = 0;
    uint64_t offset = 0;  // into arena_
    uint32_t length = 0;
    int64_t count = 0;  // 0 = empty slot
  };

  std::string_view view(const Entry& e) const { return std::string_view(arena_.data() + e.offset, e.length); }

  void add_hashed(std::string_view chunk, uint64_t h, int64_t count) {
    size_t mask = entries_.size() - 1;
    size_t i = h & mask;
    for (; entries_[i].count; i = (i + 1) & mask) {
      const Entry& e = entries_[i];
      if (e.hash == h && e.length == chunk.size() && bytes_equal(arena_.data() + e.offset, chunk.data(), chunk.size())) {
        entries_[i].count += count;
        return;
      }
    }
    entries_[i] = Entry{h, arena_.size(), static_cast<uint32_t>(chunk.size()), count};
    arena_.append(chunk);
    if (++size_ * 2 > entries_.size()) grow();
  }

  void grow() {
    std::vector<Entry> old(entries_.size() * 2);
    old.swap(entries_);
    const size_t mask = entries_.size() - 1;
    for (const Entry& e : old) {
      if (!e.count) continue;
      size_t i = e.hash & mask;
      while (entries_[i].count) i = (i + 1) & mask;
      entries_[i] = e;
    }
  }

  std::vector<Entry> entries_;
  std::string arena_;
  size_t size_ = 0;
};

}  // namespace ct::text_detail
