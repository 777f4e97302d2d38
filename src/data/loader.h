#pragma once
// The token loader for training (and for the trainer's held-out loss): batches of rows from the
// shards of one split of a prepared data folder (docs/data.md, "The loader").
//
// A row is a window of seq_len + 1 consecutive tokens, row = tokens [s, s + T] of a shard with
// s = k * T, so consecutive windows overlap by one token and every token is a target once per
// epoch; inputs = row[:-1], targets = row[1:]. In each epoch the shard order is shuffled with the
// seed, and the windows of each shard are shuffled too; the epoch's rows are the windows of the
// shards in that order. A step takes the next batch_rows * world_size rows of the epoch: rank r
// gets rows [r * batch_rows, (r + 1) * batch_rows) of them, so ranks read disjoint rows. When fewer
// rows than a step are left, the next epoch begins (a new order; the few rows left are skipped).
//
// Only shards that the manifest lists for the split are opened, all of them when the loader is made:
// then each file's size, token count and version are checked against the manifest and every token
// id against its vocabulary, and later its SHA-256, when it is first read. The split "val" is
// refused: the trainer can never read the pinned validation documents through this class
// (docs/harness.md, the data gate). With a ReadGuard (util/read_guard.h), every file is admitted by
// the guard before it is opened, so a manifest or a shard that resolves into val/ or eval_bundle/ is
// refused and the guard records what was read.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/manifest.h"
#include "data/shard.h"
#include "util/json.h"

namespace ct {

class ReadGuard;

struct LoaderState {
  // Identity: a state is restored only into a loader of the same split, seed, row length and data.
  std::string split;
  uint64_t seed = 0;
  int64_t seq_len = 0;
  std::string manifest_sha256;
  // Position.
  int64_t epoch = 0;
  int64_t epoch_row = 0;  // rows of this epoch consumed by all ranks together
  int64_t batches = 0;    // next_batch calls so far, for the record
  bool operator==(const LoaderState&) const = default;
};

Json to_json(const LoaderState& state);
LoaderState loader_state_from_json(const Json& json);

class TokenLoader {
 public:
  // dir holds manifest.json and the shards; split "train" or "heldout". `read_guard` (optional,
  // must outlive the loader) admits every file before it is opened.
  TokenLoader(const std::filesystem::path& dir, const std::string& split, int64_t batch_rows, int64_t seq_len,
              uint64_t seed, int rank = 0, int world_size = 1, ReadGuard* read_guard = nullptr);
  ~TokenLoader();
  TokenLoader(TokenLoader&&) noexcept;
  TokenLoader& operator=(TokenLoader&&) noexcept;

  // Fills inputs and targets, each batch_rows * seq_len int32 (row-major [batch_rows, seq_len]).
  void next_batch(std::vector<int32_t>& inputs, std::vector<int32_t>& targets);

  LoaderState state() const;
  // Continues exactly where `state` was; errors if it belongs to another split, seed, seq_len or data.
  void restore(const LoaderState& state);

  // Every shard read so far, in the order first read: name and SHA-256 (verified at that first read).
  std::vector<std::pair<std::string, std::string>> shards_read() const;
  // Every path this loader opened (manifest.json, then every shard of the split), for the data gate.
  std::vector<std::filesystem::path> paths_opened() const;

  const Manifest& manifest() const { return manifest_; }
  const std::string& manifest_sha256() const { return manifest_sha256_; }
  int64_t rows_per_epoch() const { return rows_per_epoch_; }
  // Steps (of batch_rows * world_size rows) in one epoch: a pass over a split, e.g. all of heldout.
  int64_t batches_per_epoch() const { return rows_per_epoch_ / (batch_rows_ * world_size_); }

 private:
  struct EpochLayout {
    int64_t epoch = -1;
    std::vector<size_t> shard_order;        // indices into shards_
    std::vector<int64_t> first_row;         // first epoch row of each position in shard_order
  };
  void ensure_epoch_layout(int64_t epoch);
  const std::vector<int64_t>& window_order(size_t shard_index);
  // The shard, its SHA-256 checked against the manifest's on the first call.
  const ShardFile& hashed_shard(size_t shard_index);
  void copy_row(int64_t epoch_row, int32_t* row);

  std::filesystem::path dir_;
  std::string split_;
  int64_t batch_rows_, seq_len_;
  uint64_t seed_;
  int rank_, world_size_;
  ReadGuard* read_guard_;
  Manifest manifest_;
  std::string manifest_sha256_;
  std::vector<ShardRecord> shards_;
  std::vector<ShardFile> files_;  // each shard of shards_, mapped and checked (size, header, ids)
  std::vector<bool> hashed_;      // its SHA-256 checked
  std::vector<int64_t> windows_;  // windows (rows) in each shard
  int64_t rows_per_epoch_ = 0;
  LoaderState position_;
  EpochLayout layout_;
  std::map<size_t, std::vector<int64_t>> window_orders_;  // this epoch's, per shard
  std::vector<size_t> read_order_;                        // shards in the order first read
  std::vector<std::filesystem::path> paths_opened_;
  std::vector<int32_t> row_;
};

}  // namespace ct
