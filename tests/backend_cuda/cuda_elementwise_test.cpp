// Device tests (skipped without a GPU): memory, host transfers, elementwise ops, reductions and
// value slots of the CUDA backend against the CPU backend.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda_test_support.h"

namespace ct::test {
namespace {

TEST(CudaMemory, AllocateZeroesAndTransfersRoundTrip) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
    Buffer zeros(gpu, Shape{3, 5}, dtype);
    for (double v : read(gpu, zeros)) EXPECT_EQ(v, 0.0) << dtype_name(dtype);
    const Values values = dtype == DType::bf16 ? round_to_bf16(random_values(15, 1)) : random_values(15, 1);
    Buffer b = make(gpu, Shape{3, 5}, dtype, values);
    const Values back = read(gpu, b);
    for (size_t i = 0; i < values.size(); ++i) {
      if (dtype == DType::f32) EXPECT_EQ(back[i], static_cast<double>(static_cast<float>(values[i])));
      else EXPECT_EQ(back[i], values[i]) << dtype_name(dtype);
    }
  }
  Buffer ids = make_ids(gpu, Shape{4}, {3, -1, 7, 2147483647});
  EXPECT_EQ(read_ids(gpu, ids), (std::vector<int32_t>{3, -1, 7, 2147483647}));
  expect_error([&] { gpu.download(nullptr, DType::i32, Buffer(gpu, Shape{2}, DType::f32)); }, {"download"});
  expect_error([&] { Buffer f(gpu, Shape{2}, DType::f32); std::vector<int32_t> h(2); gpu.download(h.data(), DType::i32, f); },
               {"cannot convert f32 to i32"});
  EXPECT_GT(gpu.memory_in_use_bytes(), 0);
}

// The gate's full_machine check (src/harness/gate.cpp) compares devices used (device_count() x
// world_size()) with devices_present(): present must be every GPU the machine shows, which
// `nvidia-smi -L` lists one per line, whatever CUDA_VISIBLE_DEVICES leaves this process
// (util/machine_gpus.h: the driver's count, NVML's).
TEST(CudaMemory, DevicesPresentAreTheMachinesGpus) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  EXPECT_EQ(gpu.device_count(), 1);
  EXPECT_EQ(gpu.world_size(), 1);
  EXPECT_GE(gpu.devices_present(), 1);
  EXPECT_FALSE(gpu.devices_present_how().empty());
  std::printf("devices present: %d (%s)\n", gpu.devices_present(), gpu.devices_present_how().c_str());
  FILE* listing = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!listing) GTEST_SKIP() << "nvidia-smi cannot be started";
  int listed = 0;
  char line[512];
  while (std::fgets(line, sizeof line, listing))
    if (std::string(line).rfind("GPU ", 0) == 0) ++listed;
  pclose(listing);
  if (listed == 0) GTEST_SKIP() << "nvidia-smi -L listed no GPU";
  EXPECT_EQ(gpu.devices_present(), listed) << "the backend must count every GPU nvidia-smi lists";
}

TEST(CudaMemory, Bf16ConversionsMatchTheCpuBitForBit) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  // ties, subnormals, large values, negative zero: rounding to nearest even on both sides
  Values values = random_values(4096, 2, 100.0);
  values.insert(values.end(), {1.0 + 1.0 / 256, 1.0 + 3.0 / 256, -0.0, 1e-40, 3.3e38, 1.00390625000001});
  for (DType from : {DType::f32, DType::f64}) {
    Buffer c_src = make(cpu(), Shape{static_cast<int64_t>(values.size())}, from, values);
    Buffer g_src = make(gpu, Shape{static_cast<int64_t>(values.size())}, from, values);
    Buffer c_dst(cpu(), c_src.shape(), DType::bf16), g_dst(gpu, g_src.shape(), DType::bf16);
    cpu().copy(c_dst, c_src);
    gpu.copy(g_dst, g_src);
    const Values expected = read(cpu(), c_dst), actual = read(gpu, g_dst);
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_EQ(std::signbit(actual[i]) == std::signbit(expected[i]) && actual[i] == expected[i], true)
          << dtype_name(from) << " -> bf16 of " << values[i] << ": " << actual[i] << " vs " << expected[i];
  }
}

TEST(CudaElementwise, FillAxpbyScaleMatchTheCpu) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  for (DType dtype : {DType::f32, DType::bf16}) {
    const int64_t n = 100003;  // not a multiple of anything
    const Values x = round_to_bf16(random_values(n, 3)), y = round_to_bf16(random_values(n, 4));
    Buffer cx = make(cpu(), Shape{n}, DType::f32, x), cy = make(cpu(), Shape{n}, DType::f32, y);
    Buffer gx = make(gpu, Shape{n}, dtype, x), gy = make(gpu, Shape{n}, dtype, y);
    cpu().axpby(cy, 0.7, cx, -1.3);
    gpu.axpby(gy, 0.7, gx, -1.3);
    CT_EXPECT_CLOSE(read(gpu, gy), read(cpu(), cy), tolerance_for(dtype));
    cpu().scale(cy, 3.0);
    gpu.scale(gy, 3.0);
    CT_EXPECT_CLOSE(read(gpu, gy), read(cpu(), cy), tolerance_for(dtype));
    // beta == 0 overwrites: a NaN in y does not survive
    gpu.fill(gy, NAN);
    gpu.axpby(gy, 2.0, gx, 0.0);
    cpu().axpby(cy, 2.0, cx, 0.0);
    CT_EXPECT_CLOSE(read(gpu, gy), read(cpu(), cy), tolerance_for(dtype));
    gpu.fill(gy, 0.25);
    for (double v : read(gpu, gy)) ASSERT_EQ(v, 0.25);
  }
  Buffer ids(gpu, Shape{5}, DType::i32);
  gpu.fill(ids, -7);
  EXPECT_EQ(read_ids(gpu, ids), std::vector<int32_t>(5, -7));
  expect_error([&] { gpu.fill(ids, 0.5); }, {"fill", "not an i32 integer"});
  expect_error([&] { Buffer f64(gpu, Shape{2}, DType::f64); gpu.scale(f64, 2.0); }, {"scale", "f32 or bf16"});
}

TEST(CudaReductions, SumAndSumSquaresAreDeterministicAndMatch) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{5'000'003}}) {
    const Values x = random_values(static_cast<size_t>(n), 5 + n);
    Buffer cx = make(cpu(), Shape{n}, DType::f32, x), gx = make(gpu, Shape{n}, DType::f32, x);
    const double cs = cpu().sum(cx), gs = gpu.sum(gx);
    EXPECT_NEAR(gs, cs, 1e-9 * (1 + std::abs(cs))) << n;
    const double cq = cpu().sum_squares(cx), gq = gpu.sum_squares(gx);
    EXPECT_NEAR(gq, cq, 1e-10 * cq) << n;
    EXPECT_EQ(gpu.sum_squares(gx), gq) << "same bits on a second run";
  }
}

TEST(CudaValueSlots, AccumulateAndReadWithOneWait) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  const Values a = random_values(777, 6), b = random_values(3333, 7);
  Buffer ga = make(gpu, Shape{777}, DType::f32, a), gb = make(gpu, Shape{3333}, DType::bf16, round_to_bf16(b));
  gpu.sum_to_slot(0, ga, false);
  gpu.sum_to_slot(0, gb, true);
  gpu.sum_squares_to_slot(5, ga, false);
  const std::vector<double> slots = gpu.read_value_slots(6);
  ASSERT_EQ(slots.size(), 6u);
  EXPECT_NEAR(slots[0], gpu.sum(ga) + gpu.sum(gb), 1e-9);
  EXPECT_NEAR(slots[5], gpu.sum_squares(ga), 1e-9);
  expect_error([&] { gpu.sum_to_slot(Backend::kValueSlots, ga, false); }, {"slot"});
}

TEST(CudaErrors, BadTokenIdsSurfaceAtTheNextWait) {
  CT_REQUIRE_CUDA();
  Backend& gpu = *cuda();
  Buffer table = make(gpu, Shape{4, 3}, DType::f32, random_values(12, 8));
  Buffer out(gpu, Shape{2, 3}, DType::f32);
  Buffer bad = make_ids(gpu, Shape{2}, {1, 4});
  gpu.embedding_forward(out, bad, table);  // queued: the check runs on the device
  expect_error([&] { gpu.synchronize(); }, {"synchronize", "token id outside [0, vocab)"});
  gpu.synchronize();  // the error word was cleared
  Buffer logits = make(gpu, Shape{2, 4}, DType::f32, random_values(8, 9)), losses(gpu, Shape{2}, DType::f32);
  Buffer targets = make_ids(gpu, Shape{2}, {0, 9});
  gpu.softcap_cross_entropy_forward(losses, Tensor{}, logits, targets, 15.0);
  expect_error([&] { gpu.sum(losses); }, {"target >= vocab"});
}

}  // namespace
}  // namespace ct::test
