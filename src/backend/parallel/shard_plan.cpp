#include "backend/parallel/shard_plan.h"

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace ct {

std::vector<GradientBucket> plan_buckets(const std::vector<int64_t>& param_bytes, int64_t bucket_bytes) {
  check(bucket_bytes > 0, "plan_buckets: bucket_bytes must be positive, got ", bucket_bytes);
  std::vector<GradientBucket> buckets;
  GradientBucket current;
  for (size_t i = 0; i < param_bytes.size(); ++i) {
    const int64_t bytes = param_bytes[i];
    check(bytes >= 0, "plan_buckets: parameter ", i, " has negative size ", bytes);
    if (!current.params.empty() && current.bytes + bytes > bucket_bytes) {
      buckets.push_back(std::move(current));
      current = {};
    }
    current.params.push_back(static_cast<int>(i));
    current.bytes += bytes;
  }
  if (!current.params.empty()) buckets.push_back(std::move(current));
  return buckets;
}

std::vector<int> assign_owners(const std::vector<double>& costs, int world_size) {
  check(world_size >= 1, "assign_owners: world_size must be >= 1, got ", world_size);
  std::vector<int> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return costs[a] > costs[b]; });
  std::vector<double> load(static_cast<size_t>(world_size), 0.0);
  std::vector<int> owner(costs.size(), 0);
  for (int param : order) {
    check(costs[param] >= 0, "assign_owners: parameter ", param, " has negative cost");
    const int rank = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());  // first minimum
    owner[static_cast<size_t>(param)] = rank;
    load[static_cast<size_t>(rank)] += costs[param];
  }
  return owner;
}

double newton_schulz_cost(int64_t rows, int64_t cols) {
  const double m = static_cast<double>(std::min(rows, cols)), n = static_cast<double>(std::max(rows, cols));
  return 2.0 * m * m * n + m * m * m;
}

ShardSlice shard_slice(int64_t n, int world_size, int rank, int64_t align) {
  check(world_size >= 1 && rank >= 0 && rank < world_size, "shard_slice: rank ", rank, " outside [0, ", world_size,
        ")");
  check(align >= 1 && n >= 0, "shard_slice: need n >= 0 and align >= 1, got ", n, " and ", align);
  // pieces of ceil(n / world) rounded up to the alignment
  const int64_t per_rank = (n + world_size - 1) / world_size;
  const int64_t piece = (per_rank + align - 1) / align * align;
  ShardSlice slice;
  slice.begin = std::min(n, piece * rank);
  slice.end = rank == world_size - 1 ? n : std::min(n, piece * (rank + 1));
  return slice;
}

}  // namespace ct
