// Device test (skipped without a GPU): the residual scalars' ops against the CPU backend. Written and
// compiled; not yet run on a GPU (docs/cuda.md).
#include "cuda_test_support.h"

namespace ct::test {
namespace {

TEST(CudaResidualMix, ForwardAndBackwardMatchTheCpu) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  const int64_t rows = 1000, cols = 96, n = rows * cols;  // several blocks of the sums
  const Values x = random_values(n, 40), x0 = random_values(n, 41), g = random_values(n, 42);
  const Values dx0 = random_values(n, 43);
  const Shape shape{rows, cols};
  auto on = [&](Backend& be, const Shape& s, const Values& v) { return make(be, s, DType::f32, v); };
  Buffer cx = on(cpu(), shape, x), cx0 = on(cpu(), shape, x0), cr = on(cpu(), {1}, {1.12}), ca = on(cpu(), {1}, {0.18});
  Buffer gx = on(gpu, shape, x), gx0 = on(gpu, shape, x0), gr = on(gpu, {1}, {1.12}), ga = on(gpu, {1}, {0.18});
  Buffer csaved(cpu(), shape, DType::f32), gsaved = poisoned(gpu, shape, DType::f32);
  cpu().residual_mix_forward(cx, csaved, cx0, cr, ca);
  gpu.residual_mix_forward(gx, gsaved, gx0, gr, ga);
  CT_EXPECT_CLOSE(read(gpu, gx), read(cpu(), cx), 1e-6);
  EXPECT_EQ(read(gpu, gsaved), read(cpu(), csaved));

  Buffer cg = on(cpu(), shape, g), cdx0 = on(cpu(), shape, dx0), cdr = on(cpu(), {1}, {0.5}), cda = on(cpu(), {1}, {-0.5});
  Buffer gg = on(gpu, shape, g), gdx0 = on(gpu, shape, dx0), gdr = on(gpu, {1}, {0.5}), gda = on(gpu, {1}, {-0.5});
  cpu().residual_mix_backward(cg, cdx0, cdr, cda, csaved, cx0, cr, ca);
  gpu.residual_mix_backward(gg, gdx0, gdr, gda, gsaved, gx0, gr, ga);
  CT_EXPECT_CLOSE(read(gpu, gg), read(cpu(), cg), 1e-6);
  CT_EXPECT_CLOSE(read(gpu, gdx0), read(cpu(), cdx0), 1e-6);
  CT_EXPECT_CLOSE(read(gpu, gdr), read(cpu(), cdr), 1e-5);  // the same sums in double, in another order
  CT_EXPECT_CLOSE(read(gpu, gda), read(cpu(), cda), 1e-5);
  Buffer half(gpu, shape, DType::bf16);
  expect_error([&] { gpu.residual_mix_forward(half, Tensor{}, half, gr, ga); }, {"residual_mix_forward"});
}

}  // namespace
}  // namespace ct::test
