// Time of each CPU-backend op at the shapes of one cpu-small micro-batch (16,384 tokens: B 32 x T 512,
// n_embd 256, 2 heads of 128, MLP 1024, vocab 8192), next to the GEMM time of the same step, so that
// speed work sees where the non-GEMM time goes.
//
//   build/release/bench/cpu_ops_bench [--threads 0] [--clock wall|thread-cpu] [--repeats 3] [--only TEXT]
//
// --only times just the ops whose name contains TEXT (e.g. "bf16" for the AMX attention).
//
// Each line: best-of-repeats milliseconds per call and a rate: GFLOP/s for attention (4 B H T^2 D / 2
// forward, 2.5x that backward) and GEMM, GB/s of tensor bytes read + written for the others.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "util/threads.h"

namespace {

bool use_thread_cpu_clock = false;

double now_seconds() {
  if (use_thread_cpu_clock) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double best_seconds(const std::function<void()>& fn, int repeats) {
  fn();  // warm-up
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    double start = now_seconds();
    fn();
    best = std::min(best, now_seconds() - start);
  }
  return best;
}

void report(const char* name, double seconds, double amount, const char* unit) {
  std::printf("%-34s %9.2f ms  %8.1f %s\n", name, seconds * 1e3, amount / seconds / 1e9, unit);
}

}  // namespace

int main(int argc, char** argv) {
  int threads_wanted = 0, repeats = 3;
  std::string clock = "wall", only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--threads") threads_wanted = std::stoi(value);
    else if (flag == "--clock") clock = value;
    else if (flag == "--repeats") repeats = std::stoi(value);
    else if (flag == "--only") only = value;
    else {
      std::fprintf(stderr, "cpu_ops_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ct::BackendOptions options;
  options.threads = threads_wanted;
  auto backend = ct::create_backend(options);
  ct::Backend& be = *backend;
  if ((clock == "thread-cpu" && ct::thread_count() != 1) || (clock != "wall" && clock != "thread-cpu")) {
    std::fprintf(stderr, "cpu_ops_bench: --clock is wall, or thread-cpu with --threads 1\n");
    return 2;
  }
  use_thread_cpu_clock = clock == "thread-cpu";
  std::printf("cpu_ops_bench: %s, %s clock\n", be.device_description().c_str(), clock.c_str());

  using ct::Buffer;
  using ct::DType;
  using ct::Shape;
  const int64_t B = 32, T = 512, H = 2, D = 128, C = H * D, N = B * T, F = 4 * C, V = 8192;
  const auto f32 = DType::f32;
  Buffer x(be, Shape{N, C}, f32), y(be, Shape{N, C}, f32), dx(be, Shape{N, C}, f32), rstd(be, Shape{N}, f32);
  Buffer q(be, Shape{B, T, H, D}, f32), k(be, Shape{B, T, H, D}, f32), v(be, Shape{B, T, H, D}, f32),
      out(be, Shape{B, T, H, D}, f32), lse(be, Shape{B, H, T}, f32), dq(be, Shape{B, T, H, D}, f32),
      dk(be, Shape{B, T, H, D}, f32), dv(be, Shape{B, T, H, D}, f32), rstd_heads(be, Shape{N * H}, f32);
  Buffer cos(be, Shape{T, D / 2}, f32), sin(be, Shape{T, D / 2}, f32);
  Buffer hidden(be, Shape{N, F}, f32), act(be, Shape{N, F}, f32), w_up(be, Shape{F, C}, f32);
  Buffer logits(be, Shape{N, V}, f32), losses(be, Shape{N}, f32), targets(be, Shape{N}, DType::i32),
      tokens(be, Shape{N}, DType::i32), wte(be, Shape{V, C}, f32), m(be, Shape{V, C}, f32), s(be, Shape{V, C}, f32);
  Buffer u(be, Shape{F, C}, f32), buf(be, Shape{F, C}, f32), ortho(be, Shape{F, C}, f32);
  for (const ct::Tensor& t : {x.tensor(), q.tensor(), k.tensor(), v.tensor(), hidden.tensor(), w_up.tensor(),
                              wte.tensor(), u.tensor()})
    be.fill(t, 0.02);
  be.fill(cos, 1.0);
  be.fill(logits, 0.3);
  be.fill(targets, 5);
  be.fill(tokens, 7);
  const double act_bytes = 4.0 * N * C, head_bytes = 4.0 * N * H * D, hidden_bytes = 4.0 * N * F,
               logit_bytes = 4.0 * N * V, table_bytes = 4.0 * V * C;
  const double attention_flop = 4.0 * B * H * T * (T + 1) / 2.0 * D;
  // times fn (best of the repeats) and prints a line, for the ops whose name contains --only
  auto measure = [&](const char* name, const std::function<void()>& fn, double amount, const char* unit) {
    if (std::string(name).find(only) != std::string::npos) report(name, best_seconds(fn, repeats), amount, unit);
  };

  measure("gemm mlp_up fwd [N,C]x[C,4C]", [&] { be.gemm(x, w_up, hidden, false, true); }, 2.0 * N * F * C, "GFLOP/s");
  measure("rmsnorm_forward [N,C]", [&] { be.rmsnorm_forward(y, rstd, x, 1.19e-7); }, 2 * act_bytes, "GB/s");
  measure("rmsnorm_backward [N,C]", [&] { be.rmsnorm_backward(dx, y, y, rstd); }, 4 * act_bytes, "GB/s");
  measure("rope_qknorm_forward [B,T,H,D]", [&] { be.rope_qknorm_forward(out, rstd_heads, q, cos, sin, 0, 1.19e-7); },
         2 * head_bytes, "GB/s");
  measure("rope_qknorm_backward [B,T,H,D]", [&] { be.rope_qknorm_backward(dq, out, out, rstd_heads, cos, sin, 0); },
         3 * head_bytes, "GB/s");
  measure("attention_forward", [&] { be.attention_forward(out, lse, q, k, v, 0.088); }, attention_flop, "GFLOP/s");
  measure("attention_backward", [&] { be.attention_backward(dq, dk, dv, out, out, lse, q, k, v, 0.088); },
         2.5 * attention_flop, "GFLOP/s");
  {
    // bf16 attention (the AMX kernels where granted) on one trainer micro-batch (cpu-small's
    // micro_batch_rows 8), random inputs: what a bf16 training step calls 4 times per layer
    const int64_t Bm = 8;
    const Shape shape16{Bm, T, H, D};
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> host(static_cast<size_t>(shape16.numel()));
    auto random_bf16 = [&] {
      Buffer b(be, shape16, DType::bf16);
      for (float& value : host) value = normal(rng);
      be.upload(b, host.data(), f32);
      return b;
    };
    Buffer q16 = random_bf16(), k16 = random_bf16(), v16 = random_bf16(), dout16 = random_bf16();
    Buffer out16(be, shape16, DType::bf16), lse16(be, Shape{Bm, H, T}, f32), dq16(be, shape16, DType::bf16),
        dk16(be, shape16, DType::bf16), dv16(be, shape16, DType::bf16);
    const double flop = attention_flop * static_cast<double>(Bm) / static_cast<double>(B);
    measure("attention_forward bf16 [8,T,H,D]", [&] { be.attention_forward(out16, lse16, q16, k16, v16, 0.088); },
           flop, "GFLOP/s");
    measure("attention_backward bf16 [8,T,H,D]",
           [&] { be.attention_backward(dq16, dk16, dv16, dout16, out16, lse16, q16, k16, v16, 0.088); },
           2.5 * flop, "GFLOP/s");
  }
  measure("relu2_forward [N,4C]", [&] { be.relu2_forward(act, hidden); }, 2 * hidden_bytes, "GB/s");
  measure("relu2_backward [N,4C]", [&] { be.relu2_backward(act, act, hidden); }, 3 * hidden_bytes, "GB/s");
  measure("cross_entropy_forward [N,V]", [&] { be.softcap_cross_entropy_forward(losses, ct::Tensor{}, logits, targets, 15.0); },
         logit_bytes, "GB/s");
  measure("cross_entropy_backward [N,V] (in place)",
         [&] {
           be.fill(logits, 0.3);
           be.softcap_cross_entropy_backward(logits, logits, targets, 15.0, 1.0 / N);
         },
         3 * logit_bytes, "GB/s (incl. a refill)");
  measure("embedding_forward [N,C]", [&] { be.embedding_forward(y, tokens, wte); }, 2 * act_bytes, "GB/s");
  measure("embedding_backward [N,C]", [&] { be.embedding_backward(m, x, tokens); }, 2 * act_bytes, "GB/s");
  measure("adamw_update [V,C]", [&] { be.adamw_update(wte, s, m, s, 1e-3, 0.8, 0.95, 1e-10, 0.0, 3); },
         7 * table_bytes, "GB/s");
  measure("muon_momentum [4C,C]", [&] { be.muon_momentum(u, buf, u, 0.95); }, 4.0 * 4 * F * C, "GB/s");
  measure("newton_schulz 5 steps [4C,C]", [&] { be.newton_schulz(ortho, u, 5, 3.4445, -4.7750, 2.0315); },
         5 * (2.0 * C * C * F * 2 + 2.0 * C * C * C), "GFLOP/s");
  return 0;
}
