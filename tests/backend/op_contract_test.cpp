// The op contract (backend/op_contract.h) is checked once, in Backend's public ops, before any kernel:
// the same bad call gets the same message from every backend compiled in (the CPU backend; the CUDA
// backend when a GPU is present), and from a backend whose kernels are never reached.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/probe_backend.h"
#include "backend_test_support.h"
#include "util/error.h"

namespace ct::test {
namespace {

struct BadCall {
  const char* op;  // the message's first word
  std::function<void(Backend&)> call;
  const char* called = nullptr;  // the op called, where its contract is another's (fp8's is gemm's)
};

// Calls that break a rule of the contract, each with tensors of dtypes every backend computes in
// (f32 main tensors), so that no backend's own dtype limit speaks first.
std::vector<BadCall> bad_calls() {
  const DType f32 = DType::f32, i32 = DType::i32;
  return {
      {"upload", [](Backend& be) { be.upload(Buffer(be, Shape{2}, DType::f32), nullptr, DType::f32); }},
      {"download", [](Backend& be) { int32_t h[2]; be.download(h, DType::i32, Buffer(be, Shape{2}, DType::f32)); }},
      {"fill", [=](Backend& be) { be.fill(Buffer(be, Shape{2}, i32), 0.5); }},
      {"copy", [=](Backend& be) { be.copy(Buffer(be, Shape{2}, f32), Buffer(be, Shape{2}, i32)); }},
      {"copy", [=](Backend& be) { be.copy(Buffer(be, Shape{2}, f32), Buffer(be, Shape{3}, f32)); }},
      {"axpby", [=](Backend& be) { be.axpby(Buffer(be, Shape{4}, f32), 1.0, Buffer(be, Shape{5}, f32), 1.0); }},
      {"axpby", [=](Backend& be) { be.axpby(Buffer(be, Shape{4}, f32), 1.0, Buffer(be, Shape{4}, i32), 1.0); }},
      {"scale", [](Backend& be) { be.scale(Tensor{}, 2.0); }},
      {"sum", [=](Backend& be) { be.sum(Buffer(be, Shape{2}, i32)); }},
      {"sum_squares", [=](Backend& be) { be.sum_squares(Buffer(be, Shape{2}, i32)); }},
      {"sum_to_slot", [=](Backend& be) { be.sum_to_slot(Backend::kValueSlots, Buffer(be, Shape{2}, f32), false); }},
      {"sum_squares_to_slot", [=](Backend& be) { be.sum_squares_to_slot(-1, Buffer(be, Shape{2}, f32), true); }},
      {"gemm",
       [=](Backend& be) {
         be.gemm(Buffer(be, Shape{3, 4}, f32), Buffer(be, Shape{5, 6}, f32), Buffer(be, Shape{3, 6}, f32), false, false);
       }},
      {"gemm",
       [=](Backend& be) {
         be.gemm(Buffer(be, Shape{3, 4}, f32), Buffer(be, Shape{4, 6}, DType::f64), Buffer(be, Shape{3, 6}, f32), false,
                 false);
       }},
      {"gemm",
       [=](Backend& be) {
         Buffer a(be, Shape{4, 4}, f32), b(be, Shape{4, 4}, f32);
         be.gemm(a, b, a, false, false);
       }},
      {"gemm",
       [=](Backend& be) {
         be.linear_forward_fp8(Buffer(be, Shape{3, 4}, f32), Buffer(be, Shape{5, 4}, f32), Buffer(be, Shape{3, 6}, f32));
       },
       "linear_forward_fp8"},
      {"embedding_forward",
       [=](Backend& be) {
         be.embedding_forward(Buffer(be, Shape{3, 3}, f32), Buffer(be, Shape{2}, i32), Buffer(be, Shape{4, 3}, f32));
       }},
      {"embedding_backward",
       [=](Backend& be) {
         be.embedding_backward(Buffer(be, Shape{4, 3}, f32), Buffer(be, Shape{2, 3}, f32), Buffer(be, Shape{2}, f32));
       }},
      {"rmsnorm_forward",
       [=](Backend& be) {
         be.rmsnorm_forward(Buffer(be, Shape{6, 10}, f32), Buffer(be, Shape{5}, f32), Buffer(be, Shape{6, 10}, f32),
                            1e-6);
       }},
      {"rmsnorm_backward",
       [=](Backend& be) {
         be.rmsnorm_backward(Buffer(be, Shape{6, 9}, f32), Buffer(be, Shape{6, 10}, f32), Buffer(be, Shape{6, 10}, f32),
                             Buffer(be, Shape{6}, f32));
       }},
      {"rope_qknorm_forward",
       [=](Backend& be) {
         Buffer odd(be, Shape{1, 4, 2, 7}, f32), table(be, Shape{8, 3}, f32);
         be.rope_qknorm_forward(odd, Buffer(be, Shape{8}, f32), odd, table, table, 0, 1e-6);
       }},
      {"rope_qknorm_backward",
       [=](Backend& be) {
         Buffer y(be, Shape{1, 4, 2, 8}, f32), table(be, Shape{6, 4}, f32);
         be.rope_qknorm_backward(Buffer(be, Shape{1, 4, 2, 8}, f32), y, y, Buffer(be, Shape{8}, f32), table, table, 3);
       }},
      {"attention_forward",
       [=](Backend& be) {
         Buffer q(be, Shape{1, 8, 3, 16}, f32), k(be, Shape{1, 8, 2, 16}, f32);
         be.attention_forward(Buffer(be, Shape{1, 8, 3, 16}, f32), Buffer(be, Shape{1, 3, 8}, f32), q, k, k, 1.0);
       }},
      {"attention_forward",
       [=](Backend& be) {
         Buffer q(be, Shape{1, 8, 2, 16}, f32), k(be, Shape{1, 4, 2, 16}, f32);
         be.attention_forward(Buffer(be, Shape{1, 8, 2, 16}, f32), Buffer(be, Shape{1, 2, 8}, f32), q, k, k, 1.0);
       }},
      {"attention_backward",
       [=](Backend& be) {
         Buffer q(be, Shape{1, 8, 2, 16}, f32), k(be, Shape{1, 8, 1, 16}, f32), lse(be, Shape{1, 2, 8}, DType::bf16);
         be.attention_backward(q, k, k, q, q, lse, q, k, k, 1.0);
       }},
      {"relu2_forward", [=](Backend& be) { be.relu2_forward(Buffer(be, Shape{4, 5}, f32), Buffer(be, Shape{5, 4}, f32)); }},
      {"relu2_backward",
       [=](Backend& be) {
         be.relu2_backward(Buffer(be, Shape{20}, f32), Buffer(be, Shape{20}, DType::f64), Buffer(be, Shape{20}, f32));
       }},
      {"softcap_cross_entropy_forward",
       [=](Backend& be) {
         be.softcap_cross_entropy_forward(Buffer(be, Shape{2}, f32), Tensor{}, Buffer(be, Shape{2, 5}, f32),
                                          Buffer(be, Shape{2}, i32), -1.0);
       }},
      {"softcap_cross_entropy_forward",
       [=](Backend& be) {
         be.softcap_cross_entropy_forward(Buffer(be, Shape{2}, f32), Buffer(be, Shape{2}, f32),
                                          Buffer(be, Shape{2, 5}, f32), Buffer(be, Shape{2}, i32), 15.0);
       }},
      {"softcap_cross_entropy_backward",
       [=](Backend& be) {
         Buffer logits(be, Shape{2, 4}, f32);
         Tensor as_bf16 = logits.tensor();
         as_bf16.dtype = DType::bf16;  // the logits' memory seen as bf16: an in-place call across dtypes
         be.softcap_cross_entropy_backward(as_bf16, logits, Buffer(be, Shape{2}, i32), 15.0, 1.0);
       }},
      {"softcap_cross_entropy_fused",
       [=](Backend& be) {
         Buffer logits(be, Shape{2, 5}, f32);
         be.softcap_cross_entropy_fused(Buffer(be, Shape{3}, f32), logits, logits, Buffer(be, Shape{2}, i32), 15.0, 1.0);
       }},
      {"residual_mix_forward",
       [=](Backend& be) {
         Buffer x(be, Shape{2, 4}, f32), s(be, Shape{1}, f32);
         be.residual_mix_forward(x, Tensor{}, Buffer(be, Shape{2, 5}, f32), s, s);
       }},
      {"residual_mix_forward",
       [=](Backend& be) {
         Buffer x(be, Shape{2, 4}, f32), s(be, Shape{1}, f32);
         be.residual_mix_forward(x, Tensor{}, x, Buffer(be, Shape{2}, f32), s);
       }},
      {"residual_mix_backward",
       [=](Backend& be) {
         Buffer x(be, Shape{2, 4}, f32), s(be, Shape{1}, f32);
         be.residual_mix_backward(x, x, s, Buffer(be, Shape{1}, DType::f64), x, x, s, s);
       }},
      {"adamw_update",
       [=](Backend& be) {
         Buffer p(be, Shape{3}, f32);
         be.adamw_update(p, p, p, p, 0.1, 0.9, 0.95, 1e-8, 0.0, 0);
       }},
      {"adamw_update",
       [=](Backend& be) {
         Buffer p(be, Shape{3}, f32);
         be.adamw_update(p, p, Buffer(be, Shape{4}, f32), p, 0.1, 0.9, 0.95, 1e-8, 0.0, 1);
       }},
      {"muon_momentum",
       [=](Backend& be) {
         Buffer g(be, Shape{9}, f32);
         be.muon_momentum(Buffer(be, Shape{8}, f32), g, g, 0.95);
       }},
      {"muon_update",
       [=](Backend& be) { be.muon_update(Buffer(be, Shape{8}, f32), Buffer(be, Shape{9}, f32), 0.02, 0.28); }},
      {"newton_schulz",
       [=](Backend& be) { be.newton_schulz(Buffer(be, Shape{4, 6}, f32), Buffer(be, Shape{6, 4}, f32), 5, 1, 1, 1); }},
      {"newton_schulz",
       [=](Backend& be) {
         Buffer v(be, Shape{6}, f32);
         be.newton_schulz(v, v, 5, 1, 1, 1);
       }},
      {"newton_schulz_many",
       [=](Backend& be) {
         Buffer g(be, Shape{4, 6}, f32);
         be.newton_schulz_many({g.tensor(), g.tensor()}, {g.tensor()}, 5, 1, 1, 1);
       }},
  };
}

std::vector<std::string> messages_of(Backend& backend) {
  std::vector<std::string> messages;
  for (const BadCall& bad : bad_calls()) {
    std::string message;
    try {
      bad.call(backend);
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT_EQ(message.rfind(std::string(bad.op) + ": ", 0), 0u)
        << backend.name() << " accepted or misnamed a bad " << bad.op << " call: \"" << message << "\"";
    messages.push_back(message);
  }
  return messages;
}

TEST(OpContract, CheckedInTheBaseClassBeforeAnyKernel) {
  ProbeBackend probe;
  const std::vector<std::string> messages = messages_of(probe);
  EXPECT_EQ(probe.kernel_calls, 0);
  // and a good call reaches the kernel
  Buffer x(probe, Shape{4}, DType::f32);
  probe.scale(x, 2.0);
  probe.gemm(Buffer(probe, Shape{2, 3}, DType::f32), Buffer(probe, Shape{4, 3}, DType::f32),
             Buffer(probe, Shape{2, 4}, DType::f32), false, true);
  EXPECT_EQ(probe.kernel_calls, 2);
}

// The list of ops is written once (backend/ops.def): every op on it has a bad call above, so a new op
// cannot join the list without its contract being exercised on every backend.
TEST(OpContract, EveryOpOfTheListHasABadCall) {
  std::vector<std::string> listed;
#define CT_OP(Ret, name, params, args, main, kernel, body) listed.push_back(#name);
#include "backend/ops.def"
#undef CT_OP
  EXPECT_GE(listed.size(), 29u);  // the include worked
  std::vector<std::string> exercised;
  for (const BadCall& bad : bad_calls()) exercised.push_back(bad.called ? bad.called : bad.op);
  for (const std::string& op : listed)
    EXPECT_NE(std::find(exercised.begin(), exercised.end(), op), exercised.end()) << op << " has no bad call";
}

TEST(OpContract, TheCpuBackendRefusesWithTheSameMessages) {
  ProbeBackend probe;
  const std::vector<std::string> expected = messages_of(probe);
  const std::vector<std::string> got = messages_of(cpu());
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]);
}

TEST(OpContract, TheCudaBackendRefusesWithTheSameMessages) {
  const std::vector<std::string> built = available_backends();
  if (std::find(built.begin(), built.end(), "cuda") == built.end()) GTEST_SKIP() << "the cuda backend is not built";
  std::unique_ptr<Backend> gpu;
  try {
    BackendOptions options;
    options.name = "cuda";
    gpu = create_backend(options);
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA device: " << e.what();
  }
  ProbeBackend probe;
  const std::vector<std::string> expected = messages_of(probe);
  const std::vector<std::string> got = messages_of(*gpu);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]);
}

// A backend's own dtype limits come before the contract's rules, in its own words.
TEST(OpContract, TheCpuBackendsOwnLimitsNameIt) {
  Buffer a(cpu(), Shape{4}, DType::bf16), b(cpu(), Shape{4}, DType::bf16);
  expect_error([&] { cpu().axpby(a, 1.0, b, 1.0); }, {"axpby", "bf16", "the cpu backend computes this op in f32 or f64"});
  ProbeBackend probe;
  Buffer pa(probe, Shape{4}, DType::bf16), pb(probe, Shape{4}, DType::bf16);
  probe.axpby(pa, 1.0, pb, 1.0);  // the contract takes bf16
  EXPECT_EQ(probe.kernel_calls, 1);
}

}  // namespace
}  // namespace ct::test
