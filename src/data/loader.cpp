#include "data/loader.h"

#include <algorithm>
#include <numeric>

#include "data/prepared_folder.h"
#include "util/error.h"
#include "util/read_guard.h"
#include "util/sha256.h"

namespace ct {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a fixed, portable generator, so that the order of rows
// depends on the seed alone and not on the standard library.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

uint64_t mix(uint64_t a, uint64_t b) {
  SplitMix64 g{a ^ SplitMix64{b}.next()};
  return g.next();
}

// Fisher-Yates over 0..n-1. The modulo bias is below n / 2^64, far under anything measurable.
template <typename T>
std::vector<T> shuffled_indices(size_t n, uint64_t seed) {
  std::vector<T> out(n);
  std::iota(out.begin(), out.end(), T{0});
  SplitMix64 g{seed};
  for (size_t i = n; i > 1; --i) std::swap(out[i - 1], out[g.next() % i]);
  return out;
}

constexpr uint64_t kShardOrderTag = 0x73686172645f6f72ULL;   // "shard_or"
constexpr uint64_t kWindowOrderTag = 0x77696e646f775f6fULL;  // "window_o"

}  // namespace

Json to_json(const LoaderState& s) {
  return Json{{"split", s.split},   {"seed", s.seed},   {"seq_len", s.seq_len}, {"manifest_sha256", s.manifest_sha256},
              {"epoch", s.epoch},   {"epoch_row", s.epoch_row}, {"batches", s.batches}};
}

LoaderState loader_state_from_json(const Json& json) {
  const std::string where = "loader state";
  LoaderState s;
  s.split = json_field<std::string>(json, "split", where);
  s.seed = json_field<uint64_t>(json, "seed", where);
  s.seq_len = json_field<int64_t>(json, "seq_len", where);
  s.manifest_sha256 = json_field<std::string>(json, "manifest_sha256", where);
  s.epoch = json_field<int64_t>(json, "epoch", where);
  s.epoch_row = json_field<int64_t>(json, "epoch_row", where);
  s.batches = json_field<int64_t>(json, "batches", where);
  return s;
}

TokenLoader::TokenLoader(const std::filesystem::path& dir, const std::string& split, int64_t batch_rows,
                         int64_t seq_len, uint64_t seed, int rank, int world_size, ReadGuard* read_guard)
    : dir_(dir), split_(split), batch_rows_(batch_rows), seq_len_(seq_len), seed_(seed), rank_(rank),
      world_size_(world_size), read_guard_(read_guard) {
  check(split != "val", "token loader: refusing split \"val\": the pinned validation documents are read only by ",
        "the evaluator, never by training (use \"heldout\" for the trainer's loss)");
  check(split == "train" || split == "heldout", "token loader: split must be \"train\" or \"heldout\", got \"",
        split, "\"");
  check(batch_rows > 0, "token loader: batch_rows must be positive, got ", batch_rows);
  check(seq_len > 0, "token loader: seq_len must be positive, got ", seq_len);
  check(world_size > 0 && rank >= 0 && rank < world_size, "token loader: rank ", rank, " is not in [0, ",
        world_size, ")");
  const auto manifest_path = dir / kManifestFileName;
  paths_opened_.push_back(manifest_path);
  manifest_ = load_manifest(read_guard_ ? read_guard_->admit(manifest_path) : manifest_path);
  manifest_sha256_ = ct::manifest_sha256(manifest_);
  shards_ = manifest_.shards_of(split);
  check(!shards_.empty(), manifest_path.string(), ": no shards for split \"", split, "\"");
  // Every shard is mapped and checked now, before training starts and before anything is sized from
  // it: its size, token count and version against the manifest (rows are counted from checked
  // counts, so a manifest's claim never sizes memory) and every id against the vocabulary (an id the
  // model's embedding cannot hold fails here, naming its file and offset, not at its first batch).
  // The id check reads every token once, at memory or disk speed. A shard's SHA-256 is checked when
  // it is first read instead: hashing runs at 0.5-2 GB/s a core, seconds at startup for a large
  // dataset, and a run that ends before it reaches a shard never pays for that shard.
  for (const auto& shard : shards_) {
    const auto path = dir / shard.name;
    check(std::filesystem::is_regular_file(path), path.string(), ": listed in the manifest for split \"", split,
          "\" but missing");
    paths_opened_.push_back(path);
    files_.push_back(open_listed_shard(read_guard_ ? read_guard_->admit(path) : path, shard, manifest_));
    check_shard_token_ids(files_.back(), manifest_);
    // Windows k = 0, 1, ... cover tokens [k*T, k*T + T]; the last must end inside the shard.
    const int64_t tokens = files_.back().token_count();
    windows_.push_back(tokens > seq_len ? (tokens - 1) / seq_len : 0);
    rows_per_epoch_ += windows_.back();
  }
  hashed_.assign(shards_.size(), false);
  check(rows_per_epoch_ >= batch_rows * world_size, manifest_path.string(), ": split \"", split, "\" holds ",
        rows_per_epoch_, " rows of ", seq_len + 1, " tokens, fewer than one step of ", batch_rows, " x ", world_size,
        " rows");
  position_.split = split;
  position_.seed = seed;
  position_.seq_len = seq_len;
  position_.manifest_sha256 = manifest_sha256_;
  row_.resize(static_cast<size_t>(seq_len + 1));
}

TokenLoader::~TokenLoader() = default;
TokenLoader::TokenLoader(TokenLoader&&) noexcept = default;
TokenLoader& TokenLoader::operator=(TokenLoader&&) noexcept = default;

void TokenLoader::ensure_epoch_layout(int64_t epoch) {
  if (layout_.epoch == epoch) return;
  layout_.epoch = epoch;
  layout_.shard_order = shuffled_indices<size_t>(shards_.size(), mix(mix(seed_, kShardOrderTag), epoch));
  layout_.first_row.clear();
  int64_t row = 0;
  for (size_t shard : layout_.shard_order) {
    layout_.first_row.push_back(row);
    row += windows_[shard];
  }
  window_orders_.clear();
}

const std::vector<int64_t>& TokenLoader::window_order(size_t shard_index) {
  auto it = window_orders_.find(shard_index);
  if (it == window_orders_.end()) {
    uint64_t key = mix(mix(mix(seed_, kWindowOrderTag), layout_.epoch), shard_index);
    it = window_orders_.emplace(shard_index, shuffled_indices<int64_t>(windows_[shard_index], key)).first;
  }
  return it->second;
}

const ShardFile& TokenLoader::hashed_shard(size_t shard_index) {
  const ShardFile& shard = files_[shard_index];
  if (hashed_[shard_index]) return shard;
  const ShardRecord& record = shards_[shard_index];
  auto bytes = shard.file_bytes();
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  std::string digest = hash.hex_digest();
  check(digest == record.sha256, (dir_ / record.name).string(), ": SHA-256 ", digest, " does not match the manifest's ",
        record.sha256, " (the shard changed after it was prepared)");
  hashed_[shard_index] = true;
  read_order_.push_back(shard_index);
  return shard;
}

void TokenLoader::copy_row(int64_t epoch_row, int32_t* row) {
  // The position in this epoch's shard order whose rows contain epoch_row.
  auto next = std::upper_bound(layout_.first_row.begin(), layout_.first_row.end(), epoch_row);
  size_t position = static_cast<size_t>(next - layout_.first_row.begin()) - 1;
  // Positions with no windows share first_row with the next one; upper_bound skips past them.
  size_t shard_index = layout_.shard_order[position];
  int64_t window = window_order(shard_index)[static_cast<size_t>(epoch_row - layout_.first_row[position])];
  hashed_shard(shard_index).copy_tokens(window * seq_len_, seq_len_ + 1, row);
  // Rows only move forward within an epoch: orders of shards already passed are no longer needed.
  for (size_t p = 0; p < position; ++p) window_orders_.erase(layout_.shard_order[p]);
}

void TokenLoader::next_batch(std::vector<int32_t>& inputs, std::vector<int32_t>& targets) {
  const int64_t step_rows = batch_rows_ * world_size_;
  if (position_.epoch_row + step_rows > rows_per_epoch_) {
    ++position_.epoch;
    position_.epoch_row = 0;
  }
  ensure_epoch_layout(position_.epoch);
  const size_t T = static_cast<size_t>(seq_len_);
  inputs.resize(static_cast<size_t>(batch_rows_) * T);
  targets.resize(static_cast<size_t>(batch_rows_) * T);
  for (int64_t r = 0; r < batch_rows_; ++r) {
    copy_row(position_.epoch_row + rank_ * batch_rows_ + r, row_.data());
    std::copy(row_.begin(), row_.end() - 1, inputs.begin() + static_cast<std::ptrdiff_t>(r * seq_len_));
    std::copy(row_.begin() + 1, row_.end(), targets.begin() + static_cast<std::ptrdiff_t>(r * seq_len_));
  }
  position_.epoch_row += step_rows;
  ++position_.batches;
}

LoaderState TokenLoader::state() const { return position_; }

void TokenLoader::restore(const LoaderState& state) {
  const std::string where = "loader state";
  check(state.split == split_, where, ": split \"", state.split, "\", this loader reads \"", split_, "\"");
  check(state.seed == seed_, where, ": seed ", state.seed, ", this loader's is ", seed_);
  check(state.seq_len == seq_len_, where, ": seq_len ", state.seq_len, ", this loader's is ", seq_len_);
  check(state.manifest_sha256 == manifest_sha256_, where, ": manifest ", state.manifest_sha256,
        ", but the data folder's is ", manifest_sha256_, " (the data was prepared again)");
  check(state.epoch >= 0 && state.epoch_row >= 0 && state.epoch_row <= rows_per_epoch_ && state.batches >= 0,
        where, ": position epoch ", state.epoch, ", row ", state.epoch_row, " is outside the data (", rows_per_epoch_,
        " rows per epoch)");
  position_ = state;
}

std::vector<std::pair<std::string, std::string>> TokenLoader::shards_read() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t index : read_order_) out.emplace_back(shards_[index].name, shards_[index].sha256);
  return out;
}

std::vector<std::filesystem::path> TokenLoader::paths_opened() const { return paths_opened_; }

}  // namespace ct
