#include "text/bpe_trainer.h"

#include <omp.h>

#include <algorithm>
#include <future>
#include <queue>
#include <unordered_map>

#include "text/chunk_counter.h"
#include "text/pretokenizer.h"
#include "text/tokenizer_impl.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/threads.h"

namespace ct {

using text_detail::ChunkCounter;
using text_detail::pair_key;
using text_detail::pair_left;
using text_detail::pair_right;
using text_detail::U64Map;

namespace {

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// The merge loop's state: each distinct chunk ("word") once, as a run of token ids, with its count.
class MergeState {
 public:
  struct Word {
    size_t begin;     // into symbols_
    uint32_t length;  // current number of tokens
    int64_t count;    // occurrences in the text
  };

  explicit MergeState(const ChunkCounter& chunks) {
    words_.reserve(chunks.size());
    symbols_.reserve(chunks.distinct_bytes());
    chunks.for_each([&](std::string_view chunk, int64_t count) {
      if (chunk.size() < 2) return;  // holds no pair
      words_.push_back({symbols_.size(), static_cast<uint32_t>(chunk.size()), count});
      for (char c : chunk) symbols_.push_back(static_cast<uint8_t>(c));
    });
    for (uint32_t w = 0; w < words_.size(); ++w) {
      const Word& word = words_[w];
      const int32_t* s = &symbols_[word.begin];
      for (uint32_t i = 0; i + 1 < word.length; ++i) add(pair_key(s[i], s[i + 1]), word.count, w);
    }
    for (uint32_t slot = 0; slot < pair_count_.size(); ++slot)
      if (pair_count_[slot] > 0) heap_.push({pair_count_[slot], slot_key_[slot]});
    touched_.clear();
  }

  // The most frequent pair (ties: smallest key, i.e. smallest (left, right)); false if none is left.
  bool best_pair(uint64_t& key, int64_t& count) {
    while (!heap_.empty()) {
      const HeapEntry top = heap_.top();
      heap_.pop();
      const int64_t current = pair_count_[*slot_of_.find(top.key)];
      if (current == top.count) {
        key = top.key;
        count = current;
        return true;
      }
      // Stale: the count fell since the entry was pushed (a rise always pushes a fresh entry).
      if (current > 0 && current < top.count) heap_.push({current, top.key});
    }
    return false;
  }

  // Replaces every occurrence of the pair (left, right), left to right within each word, by `merged`,
  // and updates the counts of the pairs around each occurrence.
  void merge(int32_t left, int32_t right, int32_t merged) {
    const uint32_t pair_slot = *slot_of_.find(pair_key(left, right));
    std::vector<uint32_t> holders = std::move(pair_words_[pair_slot]);
    pair_words_[pair_slot] = {};
    ++step_;
    for (uint32_t w : holders) {
      Word& word = words_[w];
      int32_t* s = &symbols_[word.begin];
      const uint32_t n = word.length;
      const int64_t c = word.count;
      uint32_t out = 0, i = 0;
      while (i < n) {
        if (i + 1 < n && s[i] == left && s[i + 1] == right) {
          // ... prev [left right] next ...  ->  ... prev merged next ...
          // prev is the output so far (it may itself be `merged`), so overlapping runs such as
          // "a a a" or "a b a b" are counted exactly once each.
          if (out > 0) {
            add(pair_key(s[out - 1], left), -c, w);
            add(pair_key(s[out - 1], merged), c, w);
          }
          if (i + 2 < n) {
            add(pair_key(right, s[i + 2]), -c, w);
            add(pair_key(merged, s[i + 2]), c, w);
          }
          s[out++] = merged;
          i += 2;
        } else {
          s[out++] = s[i++];
        }
      }
      word.length = out;
    }
    pair_count_[pair_slot] = 0;
    for (uint32_t slot : touched_)
      if (pair_count_[slot] > 0) heap_.push({pair_count_[slot], slot_key_[slot]});
    touched_.clear();
  }

 private:
  struct HeapEntry {
    int64_t count;
    uint64_t key;
    // Max-heap on count; among equal counts the smallest key is "largest" (comes out first).
    bool operator<(const HeapEntry& o) const { return count != o.count ? count < o.count : key > o.key; }
  };

  void add(uint64_t key, int64_t delta, uint32_t word) {
    bool inserted = false;
    const uint32_t slot = slot_of_.get_or_insert(key, static_cast<uint32_t>(pair_count_.size()), &inserted);
    if (inserted) {
      pair_count_.push_back(0);
      pair_words_.emplace_back();
      slot_key_.push_back(key);
      last_touch_.push_back(0);
    }
    pair_count_[slot] += delta;
    if (delta > 0) {
      std::vector<uint32_t>& holders = pair_words_[slot];
      if (holders.empty() || holders.back() != word) holders.push_back(word);
      if (last_touch_[slot] != step_) {  // re-push rising counts once per step, at the end
        last_touch_[slot] = step_;
        touched_.push_back(slot);
      }
    }
  }

  std::vector<Word> words_;
  std::vector<int32_t> symbols_;
  U64Map<uint32_t> slot_of_{1 << 16};
  std::vector<int64_t> pair_count_;
  std::vector<std::vector<uint32_t>> pair_words_;  // words that held the pair (some may not any more)
  std::vector<uint64_t> slot_key_;
  std::vector<uint32_t> last_touch_;
  std::vector<uint32_t> touched_;
  uint32_t step_ = 1;
  std::priority_queue<HeapEntry> heap_;
};

}  // namespace

struct BpeTrainer::State {
  struct Batch {
    std::string text;         // documents back to back
    std::vector<size_t> ends;  // end offset of each document in `text`
  };

  BpeTrainerOptions options;
  BpeTrainingStats stats;
  int threads = 1;
  bool full = false;     // max_chars reached
  bool trained = false;
  // One batch fills while the previous one is counted by a background task (which runs its own
  // OpenMP team), so that reading documents and counting chunks overlap.
  Batch filling, counting;
  std::future<void> counting_done;
  std::vector<ChunkCounter> counters;  // one per counting thread; touched only by the counting task
  std::vector<int64_t> chunks_per_thread;
  double count_seconds = 0;  // written by the counting task

  void count(Batch& batch) {
    if (batch.text.empty()) return;
    Stopwatch watch;
    // Cut documents into pieces for the threads. A cut goes only just before an ASCII letter that
    // follows '\n': the split pattern always ends a chunk there (no alternative carries a line
    // break on into a letter) and has no look-behind, so the pieces pre-tokenize exactly as the
    // whole document does.
    const size_t piece_bytes = std::max<size_t>(1, options.piece_bytes);
    const std::string& text = batch.text;
    std::vector<std::string_view> pieces;
    size_t doc_begin = 0;
    for (size_t doc_end : batch.ends) {
      size_t begin = doc_begin;
      while (doc_end - begin > piece_bytes) {
        size_t cut = begin + piece_bytes;
        while (cut < doc_end && !(text[cut - 1] == '\n' && is_ascii_letter(text[cut]))) ++cut;
        pieces.emplace_back(text.data() + begin, cut - begin);
        begin = cut;
      }
      if (doc_end > begin) pieces.emplace_back(text.data() + begin, doc_end - begin);
      doc_begin = doc_end;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t p = 0; p < pieces.size(); ++p) {
      const int t = omp_get_thread_num();
      ChunkCounter& counter = counters[t];
      int64_t n = 0;
      pretokenize(pieces[p], [&](std::string_view chunk) {
        counter.add(chunk);
        ++n;
      });
      chunks_per_thread[t] += n;
    }
    batch.text.clear();
    batch.ends.clear();
    count_seconds += watch.seconds();
  }

  // Waits for the counting task; rethrows what it threw.
  void wait_for_counting() {
    if (counting_done.valid()) counting_done.get();
  }

  // Hands the filled batch to the counting task (after the previous one is done).
  void submit_batch() {
    wait_for_counting();
    std::swap(filling, counting);
    counting_done = std::async(std::launch::async, [this] { count(counting); });
  }
};

BpeTrainer::BpeTrainer(BpeTrainerOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  const BpeTrainerOptions& o = s.options;
  check(!o.special_tokens.empty() && o.special_tokens[0] == "<|bos|>",
        "tokenizer training: the first special token must be <|bos|>");
  const int64_t min_vocab = 256 + static_cast<int64_t>(o.special_tokens.size());
  check(o.vocab_size >= min_vocab, "tokenizer training: vocab size ", o.vocab_size, " is too small: the 256 byte tokens and ",
        o.special_tokens.size(), " special tokens need at least ", min_vocab);
  check(o.doc_cap >= 0, "tokenizer training: doc cap must be >= 0 (0 = no cap), got ", o.doc_cap);
  check(o.max_chars >= 0, "tokenizer training: max chars must be >= 0 (0 = no limit), got ", o.max_chars);
  s.threads = o.threads > 0 ? o.threads : available_cores();
  s.counters.resize(s.threads);
  s.chunks_per_thread.assign(s.threads, 0);
}

BpeTrainer::~BpeTrainer() {
  // The counting task uses the state: let it finish first.
  if (state_ && state_->counting_done.valid()) state_->counting_done.wait();
}

bool BpeTrainer::add_document(std::string_view text) {
  State& s = *state_;
  check(!s.trained, "tokenizer training: add_document() after train()");
  if (s.full) return false;
  const BpeTrainerOptions& o = s.options;
  int64_t limit = o.doc_cap > 0 ? o.doc_cap : INT64_MAX;
  if (o.max_chars > 0) limit = std::min(limit, o.max_chars - s.stats.chars);
  std::string_view kept = text;
  int64_t chars;
  if (limit < static_cast<int64_t>(text.size())) {  // a cap can bite only if chars < bytes allows it
    kept = prefix_of_code_points(text, static_cast<size_t>(limit));
    chars = static_cast<int64_t>(count_code_points(kept));
  } else {
    chars = static_cast<int64_t>(count_code_points(text));
  }
  s.stats.documents += 1;
  s.stats.chars += chars;
  s.stats.bytes += static_cast<int64_t>(kept.size());
  s.filling.text.append(kept);
  s.filling.ends.push_back(s.filling.text.size());
  if (s.filling.text.size() >= o.batch_bytes) s.submit_batch();
  if (o.max_chars > 0 && s.stats.chars >= o.max_chars) s.full = true;
  return !s.full;
}

const BpeTrainingStats& BpeTrainer::stats() const { return state_->stats; }

Tokenizer BpeTrainer::train(const Progress& progress) {
  State& s = *state_;
  check(!s.trained, "tokenizer training: train() called twice");
  s.trained = true;
  Stopwatch watch;
  s.wait_for_counting();
  s.count(s.filling);
  // Combine the per-thread counts (sums: the order does not matter).
  for (int t = 1; t < s.threads; ++t) {
    s.counters[0].merge_from(s.counters[t]);
    s.counters[t] = ChunkCounter();
  }
  for (int64_t n : s.chunks_per_thread) s.stats.chunks += n;
  s.stats.unique_chunks = static_cast<int64_t>(s.counters[0].size());
  s.stats.count_seconds = s.count_seconds;
  s.stats.wait_seconds = watch.seconds();
  watch.restart();

  const BpeTrainerOptions& o = s.options;
  const int32_t target_ranks = o.vocab_size - static_cast<int32_t>(o.special_tokens.size());
  const int32_t merges_to_do = target_ranks - 256;
  std::vector<std::string> rank_bytes(256);
  for (int b = 0; b < 256; ++b) rank_bytes[b] = std::string(1, static_cast<char>(b));

  MergeState state(s.counters[0]);
  s.counters[0] = ChunkCounter();
  // A merge whose bytes are already a token (the same bytes reached through another split, which
  // BPE allows in principle) reuses that token rather than taking a second rank, so every rank has
  // distinct bytes, as tiktoken files need.
  std::unordered_map<std::string, int32_t> rank_of_bytes;
  for (int b = 0; b < 256; ++b) rank_of_bytes.emplace(rank_bytes[b], b);
  while (static_cast<int32_t>(rank_bytes.size()) < target_ranks) {
    uint64_t key;
    int64_t count;
    check(state.best_pair(key, count), "tokenizer training: the text has only enough distinct pairs for ",
          rank_bytes.size() - 256, " merges, but vocab size ", o.vocab_size, " needs ", merges_to_do,
          ": train on more text or ask for a smaller vocabulary");
    const int32_t left = pair_left(key), right = pair_right(key);
    std::string bytes = rank_bytes[left] + rank_bytes[right];
    auto [it, is_new] = rank_of_bytes.emplace(std::move(bytes), static_cast<int32_t>(rank_bytes.size()));
    const int32_t merged = it->second;
    if (is_new) {
      rank_bytes.push_back(it->first);
      s.stats.merges += 1;
      if (progress) progress(s.stats.merges, merges_to_do);
    } else {
      s.stats.reused_tokens += 1;
    }
    state.merge(left, right, merged);
  }
  s.stats.merge_seconds = watch.seconds();
  return Tokenizer(Tokenizer::Impl::build(std::move(rank_bytes), o.special_tokens, "tokenizer training"));
}

}  // namespace ct
