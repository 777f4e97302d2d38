// The CPU backend's op timing (backend/op_timing.h): what it counts and how it names it.
#include "backend/op_timing.h"

#include <algorithm>

#include "backend_test_support.h"

namespace ct::test {
namespace {

const op_timing::Row* find_row(const std::vector<op_timing::Row>& rows, const std::string& op) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const op_timing::Row& r) { return r.op == op; });
  return it == rows.end() ? nullptr : &*it;
}

TEST(OpTiming, CountsOutermostOpsByNameAndGemmsByShape) {
  Buffer a(cpu(), Shape{6, 4}, DType::f32), b(cpu(), Shape{5, 4}, DType::f32), c(cpu(), Shape{6, 5}, DType::f32),
      g(cpu(), Shape{4, 6}, DType::f32), x(cpu(), Shape{4, 6}, DType::f32);
  cpu().fill(a, 0.5);
  cpu().fill(b, 0.25);
  cpu().fill(g, 1.0);
  op_timing::reset();
  op_timing::set_enabled(true);
  cpu().gemm(a, b, c, false, true);
  cpu().gemm(a, b, c, false, true, 1.0, 1.0);
  cpu().newton_schulz(x, g, 5, 3.4445, -4.7750, 2.0315);  // 15 gemms inside: counted as newton_schulz
  cpu().scale(c, 2.0);
  op_timing::set_enabled(false);
  cpu().scale(c, 2.0);  // not timed
  const std::vector<op_timing::Row> rows = op_timing::rows();
  op_timing::reset();
  ASSERT_EQ(rows.size(), 3u);
  const op_timing::Row* gemm = find_row(rows, "gemm f32 [6 x 5 x 4] NT");
  ASSERT_NE(gemm, nullptr) << rows[0].op;
  EXPECT_EQ(gemm->calls, 2);
  ASSERT_NE(find_row(rows, "newton_schulz"), nullptr);
  EXPECT_EQ(find_row(rows, "newton_schulz")->calls, 1);
  ASSERT_NE(find_row(rows, "scale"), nullptr);
  EXPECT_EQ(find_row(rows, "scale")->calls, 1);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_GT(rows[i].seconds, 0.0) << rows[i].op;
    if (i > 0) EXPECT_LE(rows[i].seconds, rows[i - 1].seconds) << "most time first";
  }
}

// An asynchronous backend's wait runs before each outermost op's clock starts and before it stops,
// never for the ops inside it (newton_schulz's gemms), and never while timing is off.
TEST(OpTiming, TheSynchronizerWaitsAroundEachOutermostOp) {
  Buffer x(cpu(), Shape{4, 6}, DType::f32), g(cpu(), Shape{4, 6}, DType::f32);
  cpu().fill(g, 1.0);
  int waits = 0;
  op_timing::set_synchronizer([&] { ++waits; });
  cpu().scale(g, 1.0);
  EXPECT_EQ(waits, 0) << "timing is off";
  op_timing::reset();
  op_timing::set_enabled(true);
  cpu().scale(g, 1.0);
  EXPECT_EQ(waits, 2);
  cpu().newton_schulz(x, g, 5, 3.4445, -4.7750, 2.0315);
  EXPECT_EQ(waits, 4);
  op_timing::set_enabled(false);
  op_timing::set_synchronizer({});
  op_timing::set_enabled(true);
  cpu().scale(g, 1.0);
  op_timing::set_enabled(false);
  op_timing::reset();
  EXPECT_EQ(waits, 4) << "an empty synchronizer is none";
}

TEST(OpTiming, OffByDefaultAndAfterAnOpThatFailed) {
  EXPECT_FALSE(op_timing::enabled());
  Buffer a(cpu(), Shape{2, 3}, DType::f32), c(cpu(), Shape{2, 2}, DType::f32);
  cpu().gemm(a, a, c, false, true);
  EXPECT_TRUE(op_timing::rows().empty());
  // An op that throws inside its scope closes it: the next op is still counted as outermost.
  Buffer wrong(cpu(), Shape{3, 2}, DType::f32);
  op_timing::set_enabled(true);
  EXPECT_THROW(cpu().newton_schulz(wrong, a, 5, 3.4445, -4.7750, 2.0315), Error);  // x_out's shape
  cpu().gemm(a, a, c, false, true);
  op_timing::set_enabled(false);
  const std::vector<op_timing::Row> rows = op_timing::rows();
  op_timing::reset();
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_NE(find_row(rows, "gemm f32 [2 x 2 x 3] NT"), nullptr);
  EXPECT_EQ(find_row(rows, "gemm f32 [2 x 2 x 3] NT")->calls, 1);
  ASSERT_NE(find_row(rows, "newton_schulz"), nullptr);  // the failed call, timed up to its error
}

}  // namespace
}  // namespace ct::test
