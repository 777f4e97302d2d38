// The sharding plan: buckets keep order and size bounds, every parameter has exactly one owner and
// the load is balanced, slices tile the buffer exactly with aligned boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "backend/parallel/shard_plan.h"
#include "util/error.h"

namespace ct {
namespace {

// The baseline's Muon matrices (docs/model.md): per layer Wq, Wk, Wv, Wo [640, 640], W1 [2560, 640], W2 [640, 2560].
std::vector<std::pair<int64_t, int64_t>> baseline_matrices() {
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int layer = 0; layer < 10; ++layer) {
    for (int i = 0; i < 4; ++i) shapes.push_back({640, 640});
    shapes.push_back({2560, 640});
    shapes.push_back({640, 2560});
  }
  return shapes;
}

TEST(ShardPlan, BucketsKeepOrderAndBounds) {
  const std::vector<int64_t> bytes = {10, 20, 30, 100, 5, 5, 5, 250, 1};
  const auto buckets = plan_buckets(bytes, 60);
  std::vector<int> order;
  for (const auto& b : buckets) {
    int64_t total = 0;
    for (int p : b.params) {
      order.push_back(p);
      total += bytes[static_cast<size_t>(p)];
    }
    EXPECT_EQ(total, b.bytes);
    EXPECT_TRUE(b.bytes <= 60 || b.params.size() == 1) << "only an oversized parameter may pass the bound";
  }
  std::vector<int> expected(bytes.size());
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  ASSERT_EQ(buckets.size(), 5u);  // {10,20,30} {100} {5,5,5} {250} {1}
  EXPECT_EQ(buckets[0].params, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(buckets[3].params, (std::vector<int>{7}));
  EXPECT_THROW(plan_buckets(bytes, 0), Error);
}

TEST(ShardPlan, OwnersCoverEveryMatrixAndBalanceTheWork) {
  const auto shapes = baseline_matrices();
  std::vector<double> costs;
  for (auto [r, c] : shapes) costs.push_back(newton_schulz_cost(r, c));
  const double total = std::accumulate(costs.begin(), costs.end(), 0.0);
  for (int world : {1, 2, 3, 4, 8}) {
    const std::vector<int> owner = assign_owners(costs, world);
    ASSERT_EQ(owner.size(), costs.size());
    std::vector<double> load(static_cast<size_t>(world), 0.0);
    for (size_t i = 0; i < owner.size(); ++i) {
      ASSERT_GE(owner[i], 0);
      ASSERT_LT(owner[i], world);
      load[static_cast<size_t>(owner[i])] += costs[i];
    }
    const double largest = *std::max_element(costs.begin(), costs.end());
    const double heaviest = *std::max_element(load.begin(), load.end());
    // greedy largest-first: no rank carries more than the average plus one matrix
    EXPECT_LE(heaviest, total / world + largest) << world << " ranks";
    EXPECT_EQ(owner, assign_owners(costs, world)) << "deterministic";
  }
  EXPECT_EQ(assign_owners({5, 5, 5}, 2), (std::vector<int>{0, 1, 0}));
}

TEST(ShardPlan, NewtonSchulzCostIsSymmetric) {
  EXPECT_EQ(newton_schulz_cost(2560, 640), newton_schulz_cost(640, 2560));
  EXPECT_GT(newton_schulz_cost(2560, 640), newton_schulz_cost(640, 640));
}

TEST(ShardPlan, SlicesTileTheBufferWithAlignedBoundaries) {
  for (int64_t n : {0, 1, 7, 1000, 59637760}) {
    for (int world : {1, 2, 3, 8}) {
      for (int64_t align : {1, 64}) {
        int64_t next = 0;
        for (int r = 0; r < world; ++r) {
          ShardSlice s = shard_slice(n, world, r, align);
          EXPECT_EQ(s.begin, next) << n << " " << world << " " << r;
          EXPECT_GE(s.end, s.begin);
          if (s.begin < n) EXPECT_EQ(s.begin % align, 0);
          next = s.end;
        }
        EXPECT_EQ(next, n);
      }
    }
  }
  EXPECT_THROW(shard_slice(10, 2, 2, 1), Error);
}

}  // namespace
}  // namespace ct
