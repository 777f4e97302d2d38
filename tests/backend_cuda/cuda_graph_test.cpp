// Device tests (skipped without a GPU): graph regions record once and replay with new scalars and
// new uploaded data, giving the same bits as running the ops eagerly; mismatches and host reads
// inside a region are errors; freeing memory a recording uses drops the recording.
#include "cuda_test_support.h"

namespace ct::test {
namespace {

// A small "training step": upload tokens, embed, norm, a product, a loss into a value slot, an
// AdamW update with step-dependent scalars, the gradient's sum of squares into another slot.
struct MiniStep {
  Backend& be;
  int64_t vocab = 64, width = 32, n = 48;
  Buffer table, tokens, x, y, rstd, w, out, grad, m, v;
  MiniStep(Backend& backend, uint64_t seed)
      : be(backend),
        table(make(backend, Shape{vocab, width}, DType::f32, random_values(vocab * width, seed))),
        tokens(backend, Shape{n}, DType::i32),
        x(backend, Shape{n, width}, DType::bf16),
        y(backend, Shape{n, width}, DType::bf16),
        rstd(backend, Shape{n}, DType::f32),
        w(make(backend, Shape{width, width}, DType::bf16, round_to_bf16(random_values(width * width, seed + 1)))),
        out(backend, Shape{n, width}, DType::f32),
        grad(backend, Shape{vocab, width}, DType::f32),
        m(backend, Shape{vocab, width}, DType::f32),
        v(backend, Shape{vocab, width}, DType::f32) {}

  void run(const std::vector<int32_t>& ids, int64_t step, double lr) {
    be.upload(tokens, ids.data(), DType::i32);
    be.embedding_forward(x, tokens, table);
    be.rmsnorm_forward(y, rstd, x, 1e-6);
    be.gemm(y, w, out, false, true, 1.0, 0.0);
    be.sum_squares_to_slot(0, out, false);
    be.fill(grad, 0.0);
    be.embedding_backward(grad, out, tokens);
    be.scale(grad, 1.0 / static_cast<double>(step));
    be.adamw_update(table, grad, m, v, lr, 0.8, 0.95, 1e-10, 0.0, step);
    be.sum_squares_to_slot(1, grad, false);
  }
};

std::vector<int32_t> ids_for(int step, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7 + step * 13) % vocab);
  return ids;
}

TEST(CudaGraphs, ReplayEqualsEagerExecutionBitForBit) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  ASSERT_TRUE(gpu.supports_graphs());
  MiniStep eager(gpu, 700), graphed(gpu, 700);
  for (int step = 1; step <= 4; ++step) {
    const auto ids = ids_for(step, eager.n, eager.vocab);
    const double lr = 0.01 * step;  // a new scalar every step
    eager.run(ids, step, lr);
    const std::vector<double> eager_slots = gpu.read_value_slots(2);
    gpu.begin_graph("mini");  // step 1 records, later steps replay
    graphed.run(ids, step, lr);
    gpu.end_graph();
    const std::vector<double> graph_slots = gpu.read_value_slots(2);
    EXPECT_EQ(graph_slots, eager_slots) << "step " << step;
    EXPECT_EQ(read(gpu, graphed.table), read(gpu, eager.table)) << "step " << step;
  }
}

TEST(CudaGraphs, MismatchHostReadsAndFreedMemoryAreHandled) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  Buffer a = make(gpu, Shape{100}, DType::f32, random_values(100, 710)), b(gpu, Shape{100}, DType::f32);
  gpu.begin_graph("r");
  gpu.axpby(b, 2.0, a, 0.0);
  gpu.end_graph();
  gpu.begin_graph("r");
  expect_error([&] { gpu.scale(b, 3.0); }, {"graph region 'r'", "call #1 is scale but the recording has axpby"});
  gpu.begin_graph("r");  // the failed replay closed the region; this one replays
  gpu.axpby(b, 3.0, a, 0.0);
  gpu.end_graph();
  const Values av = read(gpu, a), bv = read(gpu, b);
  for (size_t i = 0; i < av.size(); ++i) EXPECT_EQ(bv[i], static_cast<double>(3.0f * static_cast<float>(av[i])));
  gpu.begin_graph("reads");
  expect_error([&] { gpu.sum(a); }, {"sum: not allowed inside graph region 'reads'"});
  gpu.begin_graph("reads");  // the error abandoned the recording: recording again works
  gpu.scale(b, 1.0);
  gpu.end_graph();
  gpu.reset_graph("reads");
  {
    Buffer temp = make(gpu, Shape{10}, DType::f32, random_values(10, 711));
    gpu.begin_graph("temp");
    gpu.scale(temp, 2.0);
    gpu.end_graph();
  }  // freeing temp drops the "temp" recording
  Buffer other = make(gpu, Shape{10}, DType::f32, random_values(10, 712));
  gpu.begin_graph("temp");  // records anew (a replay would have touched freed memory)
  gpu.scale(other, 2.0);
  gpu.end_graph();
  gpu.synchronize();
}

}  // namespace
}  // namespace ct::test
