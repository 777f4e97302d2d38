// Device tests (skipped without a GPU): embedding, RMSNorm, rotary + QK norm, relu^2 and
// softcapped cross-entropy, forward and backward, against the CPU backend; f32 at 1e-4, bf16
// storage at 1e-2, mixed dtypes where the CUDA backend takes them.
#include "cuda_test_support.h"

namespace ct::test {
namespace {

constexpr double kEps = 1.1920929e-07;

Values maybe_bf16(const Values& v, DType dtype) { return dtype == DType::bf16 ? round_to_bf16(v) : v; }

TEST(CudaEmbedding, ForwardAndDeterministicBackward) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  const int64_t vocab = 300, width = 96, n = 4096;
  std::vector<int32_t> ids(n);
  std::mt19937 rng(40);
  for (auto& id : ids) id = static_cast<int32_t>(rng() % 17 == 0 ? 5 : rng() % vocab);  // token 5 repeats a lot
  for (DType table_dtype : {DType::f32, DType::bf16})
    for (DType out_dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(testing::Message() << "table " << dtype_name(table_dtype) << " out " << dtype_name(out_dtype));
      const Values table = maybe_bf16(random_values(vocab * width, 41), table_dtype);
      Buffer ct = make(cpu(), Shape{vocab, width}, DType::f32, table), co(cpu(), Shape{n, width}, DType::f32);
      Buffer gt = make(gpu, Shape{vocab, width}, table_dtype, table), go = poisoned(gpu, Shape{n, width}, out_dtype);
      Buffer ctok = make_ids(cpu(), Shape{n}, ids), gtok = make_ids(gpu, Shape{n}, ids);
      cpu().embedding_forward(co, ctok, ct);
      gpu.embedding_forward(go, gtok, gt);
      CT_EXPECT_CLOSE(read(gpu, go), read(cpu(), co), out_dtype == DType::bf16 ? 1e-2 : 1e-7);
    }
  for (DType dout_dtype : {DType::f32, DType::bf16}) {
    const Values dout = maybe_bf16(random_values(n * width, 42), dout_dtype), initial = random_values(vocab * width, 43);
    Buffer cd = make(cpu(), Shape{n, width}, DType::f32, dout), ctab = make(cpu(), Shape{vocab, width}, DType::f32, initial);
    Buffer gd = make(gpu, Shape{n, width}, dout_dtype, dout), gtab = make(gpu, Shape{vocab, width}, DType::f32, initial);
    Buffer ctok = make_ids(cpu(), Shape{n}, ids), gtok = make_ids(gpu, Shape{n}, ids);
    cpu().embedding_backward(ctab, cd, ctok);
    gpu.embedding_backward(gtab, gd, gtok);
    const Values first = read(gpu, gtab);
    CT_EXPECT_CLOSE(first, read(cpu(), ctab), 1e-5);
    Buffer again = make(gpu, Shape{vocab, width}, DType::f32, initial);
    gpu.embedding_backward(again, gd, gtok);
    EXPECT_EQ(read(gpu, again), first) << "same bits on a second run (no float atomics)";
  }
}

TEST(CudaRmsnorm, ForwardBackwardInEveryDtypePair) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  const int64_t rows = 1000, width = 640;
  for (DType x_dtype : {DType::f32, DType::bf16})
    for (DType y_dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(testing::Message() << "x " << dtype_name(x_dtype) << " y " << dtype_name(y_dtype));
      const double tol = x_dtype == DType::bf16 || y_dtype == DType::bf16 ? 1e-2 : 1e-4;
      const Values x = maybe_bf16(random_values(rows * width, 50, 3.0), x_dtype);
      Buffer cx = make(cpu(), Shape{rows, width}, DType::f32, x), cy(cpu(), Shape{rows, width}, DType::f32);
      Buffer cr(cpu(), Shape{rows}, DType::f32);
      Buffer gx = make(gpu, Shape{rows, width}, x_dtype, x), gy = poisoned(gpu, Shape{rows, width}, y_dtype);
      Buffer gr = poisoned(gpu, Shape{rows}, DType::f32);
      cpu().rmsnorm_forward(cy, cr, cx, kEps);
      gpu.rmsnorm_forward(gy, gr, gx, kEps);
      CT_EXPECT_CLOSE(read(gpu, gy), read(cpu(), cy), tol);
      CT_EXPECT_CLOSE(read(gpu, gr), read(cpu(), cr), 1e-5);
      // backward: dy in either dtype (the model's mixed precision: an f32 dy against a bf16 y); dx
      // accumulates in its own (x's) dtype
      for (DType dy_dtype : {DType::f32, DType::bf16}) {
        SCOPED_TRACE(testing::Message() << "dy " << dtype_name(dy_dtype));
        const Values dy = maybe_bf16(random_values(rows * width, 51), dy_dtype),
                     dx0 = maybe_bf16(random_values(rows * width, 52), x_dtype);
        Buffer cdy = make(cpu(), Shape{rows, width}, DType::f32, dy), cdx = make(cpu(), Shape{rows, width}, DType::f32, dx0);
        Buffer cyy = make(cpu(), Shape{rows, width}, DType::f32, read(gpu, gy));  // the same y on both sides
        Buffer gdy = make(gpu, Shape{rows, width}, dy_dtype, dy), gdx = make(gpu, Shape{rows, width}, x_dtype, dx0);
        cpu().rmsnorm_backward(cdx, cdy, cyy, cr);
        gpu.rmsnorm_backward(gdx, gdy, gy, gr);
        CT_EXPECT_CLOSE(read(gpu, gdx), read(cpu(), cdx), x_dtype == DType::bf16 || dy_dtype == DType::bf16 ? 1e-2 : tol);
      }
    }
}

TEST(CudaRopeQknorm, ForwardBackwardWithAnOffset) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  const int64_t B = 2, T = 37, H = 3, offset = 5;
  for (int64_t D : {64, 128})
    for (DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(testing::Message() << "D " << D << " " << dtype_name(dtype));
      const int64_t half = D / 2, positions = offset + T + 3;
      Values cos(positions * half), sin(positions * half);
      for (int64_t t = 0; t < positions; ++t)
        for (int64_t j = 0; j < half; ++j) {
          const double angle = static_cast<double>(t) * std::pow(10000.0, -2.0 * j / D);
          cos[t * half + j] = std::cos(angle);
          sin[t * half + j] = std::sin(angle);
        }
      const Shape shape{B, T, H, D};
      const Values x = maybe_bf16(random_values(shape.numel(), 60 + D), dtype);
      Buffer cc = make(cpu(), Shape{positions, half}, DType::f32, cos), cs = make(cpu(), Shape{positions, half}, DType::f32, sin);
      Buffer gc = make(gpu, Shape{positions, half}, DType::f32, cos), gs = make(gpu, Shape{positions, half}, DType::f32, sin);
      Buffer cx = make(cpu(), shape, DType::f32, x), cy(cpu(), shape, DType::f32), cr(cpu(), Shape{B * T * H}, DType::f32);
      Buffer gx = make(gpu, shape, dtype, x), gy = poisoned(gpu, shape, dtype), gr = poisoned(gpu, Shape{B * T * H}, DType::f32);
      cpu().rope_qknorm_forward(cy, cr, cx, cc, cs, offset, kEps);
      gpu.rope_qknorm_forward(gy, gr, gx, gc, gs, offset, kEps);
      CT_EXPECT_CLOSE(read(gpu, gy), read(cpu(), cy), tolerance_for(dtype));
      const Values dy = maybe_bf16(random_values(shape.numel(), 61 + D), dtype);
      Buffer cdy = make(cpu(), shape, DType::f32, dy), cyy = make(cpu(), shape, DType::f32, read(gpu, gy));
      Buffer cdx(cpu(), shape, DType::f32), gdy = make(gpu, shape, dtype, dy), gdx = poisoned(gpu, shape, dtype);
      cpu().rope_qknorm_backward(cdx, cdy, cyy, cr, cc, cs, offset);
      gpu.rope_qknorm_backward(gdx, gdy, gy, gr, gc, gs, offset);
      CT_EXPECT_CLOSE(read(gpu, gdx), read(cpu(), cdx), tolerance_for(dtype));
    }
}

// The model's mixed precision (gpt.h): an f32 projection output x into bf16 q/k; backward from an f32
// dy against the bf16 y into a bf16 dx (the next products' operand).
TEST(CudaRopeQknorm, MixedStorageOfTheModelsBf16Path) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  const int64_t B = 2, T = 33, H = 5, D = 128, half = D / 2;
  Values cos(T * half), sin(T * half);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(t) * std::pow(10000.0, -2.0 * j / D);
      cos[t * half + j] = std::cos(angle);
      sin[t * half + j] = std::sin(angle);
    }
  const Shape shape{B, T, H, D};
  const Values x = random_values(shape.numel(), 70), dy = random_values(shape.numel(), 71);
  Buffer cc = make(cpu(), Shape{T, half}, DType::f32, cos), cs = make(cpu(), Shape{T, half}, DType::f32, sin);
  Buffer gc = make(gpu, Shape{T, half}, DType::f32, cos), gs = make(gpu, Shape{T, half}, DType::f32, sin);
  Buffer cx = make(cpu(), shape, DType::f32, x), cy(cpu(), shape, DType::f32), cr(cpu(), Shape{B * T * H}, DType::f32);
  Buffer gx = make(gpu, shape, DType::f32, x), gy = poisoned(gpu, shape, DType::bf16);
  Buffer gr = poisoned(gpu, Shape{B * T * H}, DType::f32);
  cpu().rope_qknorm_forward(cy, cr, cx, cc, cs, 0, kEps);
  gpu.rope_qknorm_forward(gy, gr, gx, gc, gs, 0, kEps);
  CT_EXPECT_CLOSE(read(gpu, gy), read(cpu(), cy), 1e-2);
  CT_EXPECT_CLOSE(read(gpu, gr), read(cpu(), cr), 1e-5);
  Buffer cdy = make(cpu(), shape, DType::f32, dy), cyy = make(cpu(), shape, DType::f32, read(gpu, gy));
  Buffer cdx(cpu(), shape, DType::f32), gdy = make(gpu, shape, DType::f32, dy), gdx = poisoned(gpu, shape, DType::bf16);
  cpu().rope_qknorm_backward(cdx, cdy, cyy, cr, cc, cs, 0);
  gpu.rope_qknorm_backward(gdx, gdy, gy, gr, gc, gs, 0);
  CT_EXPECT_CLOSE(read(gpu, gdx), read(cpu(), cdx), 1e-2);
}

TEST(CudaRelu2, ForwardBackward) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  const int64_t n = 123457;
  for (DType dtype : {DType::f32, DType::bf16}) {
    const Values x = maybe_bf16(random_values(n, 70), dtype), dy = maybe_bf16(random_values(n, 71), dtype);
    Buffer cx = make(cpu(), Shape{n}, DType::f32, x), cy(cpu(), Shape{n}, DType::f32);
    Buffer gx = make(gpu, Shape{n}, dtype, x), gy = poisoned(gpu, Shape{n}, dtype);
    cpu().relu2_forward(cy, cx);
    gpu.relu2_forward(gy, gx);
    CT_EXPECT_CLOSE(read(gpu, gy), read(cpu(), cy), tolerance_for(dtype));
    Buffer cdy = make(cpu(), Shape{n}, DType::f32, dy), cdx(cpu(), Shape{n}, DType::f32);
    Buffer gdy = make(gpu, Shape{n}, dtype, dy), gdx = poisoned(gpu, Shape{n}, dtype);
    cpu().relu2_backward(cdx, cdy, cx);
    gpu.relu2_backward(gdx, gdy, gx);
    CT_EXPECT_CLOSE(read(gpu, gdx), read(cpu(), cdx), tolerance_for(dtype));
  }
}

TEST(CudaCrossEntropy, ForwardArgmaxAndBackwardInPlace) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  for (int64_t vocab : {1000, 8192})
    for (double softcap : {0.0, 15.0})
      for (DType dtype : {DType::f32, DType::bf16}) {
        SCOPED_TRACE(testing::Message() << "V " << vocab << " softcap " << softcap << " " << dtype_name(dtype));
        const int64_t rows = 300;
        const Values logits = maybe_bf16(random_values(rows * vocab, 80 + vocab, 8.0), dtype);
        std::vector<int32_t> targets(rows);
        std::mt19937 rng(81);
        for (auto& t : targets) t = rng() % 7 == 0 ? -1 : static_cast<int32_t>(rng() % vocab);
        Buffer cl = make(cpu(), Shape{rows, vocab}, DType::f32, logits), ctg = make_ids(cpu(), Shape{rows}, targets);
        Buffer gl = make(gpu, Shape{rows, vocab}, dtype, logits), gtg = make_ids(gpu, Shape{rows}, targets);
        Buffer closs(cpu(), Shape{rows}, DType::f32), cam(cpu(), Shape{rows}, DType::i32);
        Buffer gloss = poisoned(gpu, Shape{rows}, DType::f32), gam = poisoned(gpu, Shape{rows}, DType::i32);
        cpu().softcap_cross_entropy_forward(closs, cam, cl, ctg, softcap);
        gpu.softcap_cross_entropy_forward(gloss, gam, gl, gtg, softcap);
        CT_EXPECT_CLOSE(read(gpu, gloss), read(cpu(), closs), 1e-5);
        EXPECT_EQ(read_ids(gpu, gam), read_ids(cpu(), cam));
        // backward into a separate bf16 buffer, and in place (same dtype)
        Buffer cd(cpu(), Shape{rows, vocab}, DType::f32);
        cpu().softcap_cross_entropy_backward(cd, cl, ctg, softcap, 0.37);
        const Values expected = read(cpu(), cd);
        Buffer gd16 = poisoned(gpu, Shape{rows, vocab}, DType::bf16);
        gpu.softcap_cross_entropy_backward(gd16, gl, gtg, softcap, 0.37);
        CT_EXPECT_CLOSE(read(gpu, gd16), expected, 1e-2);
        gpu.softcap_cross_entropy_backward(gl, gl, gtg, softcap, 0.37);
        CT_EXPECT_CLOSE(read(gpu, gl), expected, tolerance_for(dtype));
      }
}

}  // namespace
}  // namespace ct::test
