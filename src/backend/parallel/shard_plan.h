#pragma once
// The data-parallel layout, as plain arithmetic (tested on the CPU):
// - buckets: gradients are reduced in groups, in the order the backward pass finishes them, so
//   that the reduction of one group overlaps the backward pass of the next;
// - owners: with a sharded optimizer each process keeps the state of the parameters it owns and
//   updates them (Muon needs whole matrices, so a parameter is never split), then broadcasts them;
// - slices: flat buffers reduce-scattered in equal, aligned contiguous pieces.
// Every function is deterministic: every process computes the same plan from the same inputs.
#include <cstdint>
#include <vector>

namespace ct {

struct GradientBucket {
  std::vector<int> params;  // indices into the input list, in order
  int64_t bytes = 0;
};

// Consecutive parameters (given in gradient-ready order, by size in bytes) grouped until adding
// the next one would pass bucket_bytes; a parameter larger than bucket_bytes is a bucket alone.
std::vector<GradientBucket> plan_buckets(const std::vector<int64_t>& param_bytes, int64_t bucket_bytes);

// The rank that owns each parameter: largest cost first, each to the rank with the least cost so
// far (ties: the lower rank; equal costs: the lower index first).
std::vector<int> assign_owners(const std::vector<double>& costs, int world_size);

// Newton-Schulz's cost of a [rows, cols] matrix (proportional to its FLOPs): 2 m^2 n + m^3 per
// iteration with m = min, n = max; the input of assign_owners for Muon's matrices.
double newton_schulz_cost(int64_t rows, int64_t cols);

struct ShardSlice {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
// Rank `rank`'s piece of n elements cut into world_size pieces, every boundary a multiple of
// `align` elements (the last piece takes the remainder; pieces may be empty when n is small).
ShardSlice shard_slice(int64_t n, int world_size, int rank, int64_t align);

}  // namespace ct
