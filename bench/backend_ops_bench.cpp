// Times the backend's ops at the baseline's shapes (docs/model.md: N = 65,536 positions, C = 640,
// F = 2560, V = 8192, 5 heads of 128, T = 1024) plus the two ceilings every speed claim divides by:
// the matmul rate on a large square product and the device-to-device copy bandwidth.
//
//   backend_ops_bench --backend cuda [--matmul-precision bf16] [--dtype bf16] [--repeats 20] [--json FILE]
//                     [--also-attention cudnn]
//
// --also-attention KERNELS times attention a second time, in the same run, on a second backend made
// with BackendOptions::attention = KERNELS (flash, cudnn or reference; rows "attention fwd KERNELS",
// "attention bwd KERNELS"): the
// side-by-side comparison of two attention implementations (docs/cuda.md, "Attention"). A backend
// that cannot be made is reported and skipped.
//
// Each line: the op, its shape, median milliseconds over the repeats (after one warm-up call), and
// the rate it reached: TFLOP/s for products (2 m n k per product; causal attention counts the
// visible half of the scores), GB/s for memory-bound ops (bytes each input read once, each output
// written once). Inputs are random (never zeros: METHOD.md), the same for every repeat.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "util/error.h"

namespace ct {
namespace {

struct Options {
  std::string backend = "cuda";
  std::string matmul_precision = "bf16";
  DType dtype = DType::bf16;
  int repeats = 20;
  int64_t rows = 65536;  // token positions
  std::string json;
  std::string also_attention;  // attention kernels (backend.attention) to time beside the default
};

struct Result {
  std::string op, shape, unit;
  double ms = 0, rate = 0;
};

double median_ms(Backend& be, int repeats, const std::function<void()>& fn) {
  fn();
  be.synchronize();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    be.synchronize();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Normal values: at most 4M drawn, repeated to fill the rest (the rates do not depend on the values,
// and drawing all of the lm_head's 537M gradient values took most of the stage's minute on the H200
// machine's host).
Buffer random_buffer(Backend& be, const Shape& shape, DType dtype, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, static_cast<float>(scale));
  std::vector<float> host(static_cast<size_t>(shape.numel()));
  const size_t drawn = std::min<size_t>(host.size(), size_t{1} << 22);
  for (size_t i = 0; i < drawn; ++i) host[i] = normal(rng);
  for (size_t i = drawn; i < host.size(); i += drawn)
    std::copy_n(host.begin(), std::min(drawn, host.size() - i), host.begin() + static_cast<std::ptrdiff_t>(i));
  Buffer b(be, shape, dtype);
  be.upload(b, host.data(), DType::f32);
  return b;
}

using Report = std::function<void(const std::string& op, const std::string& shape, double ms, double amount,
                                   const char* unit)>;

// Causal attention at the baseline's shape, forward and backward; `label` follows the op's name.
void time_attention(Backend& be, DType dt, int64_t B, int64_t T, int64_t H, int64_t D, int repeats,
                    const std::string& label, const Report& report) {
  const Shape s{B, T, H, D};
  Buffer q = random_buffer(be, s, dt, 7), k = random_buffer(be, s, dt, 8), v = random_buffer(be, s, dt, 9);
  Buffer out(be, s, dt), lse(be, {B, H, T}, DType::f32), dout = random_buffer(be, s, dt, 10);
  Buffer dq(be, s, dt), dk(be, s, dt), dv(be, s, dt);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const double causal_flops = 4.0 * B * H * D * (static_cast<double>(T) * (T + 1) / 2);  // QK^T and PV
  report(str("attention fwd", label), str(B, "x", T, "x", H, "x", D), median_ms(be, repeats, [&] {
           be.attention_forward(out, lse, q, k, v, scale);
         }), causal_flops, "TFLOP/s");
  report(str("attention bwd", label), str(B, "x", T, "x", H, "x", D), median_ms(be, repeats, [&] {
           be.attention_backward(dq, dk, dv, dout, out, lse, q, k, v, scale);
         }), 2.5 * causal_flops, "TFLOP/s");
}

int run(const Options& o) {
  check(o.also_attention.empty() || o.backend == "cuda", "--also-attention chooses the cuda backend's attention ",
        "kernels: it applies to --backend cuda, not ", o.backend);
  const AttentionKernels also_attention =
      o.also_attention.empty() ? AttentionKernels::automatic : parse_attention_kernels(o.also_attention, "--also-attention");
  BackendOptions bo;
  bo.name = o.backend;
  bo.matmul_precision = parse_matmul_precision(o.matmul_precision, "--matmul-precision");
  auto backend = create_backend(bo);
  Backend& be = *backend;
  std::printf("backend: %s\n", be.device_description().c_str());
  std::vector<Result> results;
  const Report report = [&](const std::string& op, const std::string& shape, double ms, double amount,
                            const char* unit) {
    Result r{op, shape, unit, ms, amount / (ms * 1e-3) / (std::string(unit) == "TFLOP/s" ? 1e12 : 1e9)};
    results.push_back(r);
    std::printf("%-26s %-30s %9.3f ms %9.1f %s\n", op.c_str(), shape.c_str(), ms, r.rate, unit);
    std::fflush(stdout);
  };
  const DType dt = o.dtype;
  const double elem = static_cast<double>(dtype_size(dt));
  const int64_t N = o.rows, C = 640, F = 2560, V = 8192, H = 5, D = 128, T = 1024, B = N / T;

  // ---- ceilings ----
  {
    const int64_t S = 8192;
    Buffer a = random_buffer(be, {S, S}, dt, 1), b = random_buffer(be, {S, S}, dt, 2), c(be, {S, S}, DType::f32);
    const double ms = median_ms(be, o.repeats, [&] { be.gemm(a, b, c, false, true, 1.0, 0.0); });
    report("matmul_peak", "8192x8192x8192", ms, 2.0 * S * S * S, "TFLOP/s");
  }
  {
    const int64_t n = int64_t{1} << 30;  // 1 Gi elements of 2 bytes: 2 GiB each way
    Buffer src = random_buffer(be, {n}, DType::bf16, 3), dst(be, {n}, DType::bf16);
    const double ms = median_ms(be, o.repeats, [&] { be.copy(dst, src); });
    report("copy_bandwidth", "2 GiB", ms, 2.0 * 2.0 * static_cast<double>(n), "GB/s");
  }
  // ---- the model's products (forward and the two backward products of each linear) ----
  struct Linear {
    const char* name;
    int64_t out, in;
  };
  for (const Linear& l : {Linear{"qkv/attn_proj", C, C}, Linear{"mlp_fc", F, C}, Linear{"mlp_proj", C, F},
                          Linear{"lm_head", V, C}}) {
    Buffer x = random_buffer(be, {N, l.in}, dt, 4), w = random_buffer(be, {l.out, l.in}, dt, 5, 0.05);
    Buffer y(be, {N, l.out}, l.out == V ? DType::f32 : dt), dy = random_buffer(be, {N, l.out}, dt, 6);
    Buffer dx(be, {N, l.in}, dt), dw(be, {l.out, l.in}, DType::f32);
    const double flops = 2.0 * N * l.out * l.in;
    const std::string shape = str(N, "x", l.in, " -> ", l.out);
    report(str(l.name, " fwd"), shape, median_ms(be, o.repeats, [&] { be.gemm(x, w, y, false, true, 1.0, 0.0); }), flops,
           "TFLOP/s");
    report(str(l.name, " dx"), shape, median_ms(be, o.repeats, [&] { be.gemm(dy, w, dx, false, false, 1.0, 0.0); }),
           flops, "TFLOP/s");
    report(str(l.name, " dW+="), shape, median_ms(be, o.repeats, [&] { be.gemm(dy, x, dw, true, false, 1.0, 1.0); }),
           flops, "TFLOP/s");
  }
  // ---- attention ----
  time_attention(be, dt, B, T, H, D, o.repeats, "", report);
  if (!o.also_attention.empty()) {
    BackendOptions other_options = bo;
    other_options.attention = also_attention;
    std::unique_ptr<Backend> other;
    try {
      other = create_backend(other_options);
    } catch (const Error& e) {
      std::printf("attention %s: no backend (%s)\n", o.also_attention.c_str(), e.what());
    }
    if (other) {
      std::printf("backend: %s\n", other->device_description().c_str());
      time_attention(*other, dt, B, T, H, D, o.repeats, " " + o.also_attention, report);
    }
  }
  // ---- memory-bound ops ----
  {
    Buffer x = random_buffer(be, {N, C}, DType::f32, 11), y(be, {N, C}, dt), r(be, {N}, DType::f32);
    report("rmsnorm fwd f32->dt", str(N, "x", C), median_ms(be, o.repeats, [&] { be.rmsnorm_forward(y, r, x, 1e-6); }),
           N * C * (4.0 + elem), "GB/s");
    Buffer dy = random_buffer(be, {N, C}, dt, 12);
    report("rmsnorm bwd dt->f32", str(N, "x", C), median_ms(be, o.repeats, [&] { be.rmsnorm_backward(x, dy, y, r); }),
           N * C * (2 * elem + 8.0), "GB/s");
  }
  {
    Buffer h = random_buffer(be, {N, F}, dt, 13), a(be, {N, F}, dt), dh(be, {N, F}, dt);
    report("relu2 fwd", str(N, "x", F), median_ms(be, o.repeats, [&] { be.relu2_forward(a, h); }), 2.0 * N * F * elem,
           "GB/s");
    report("relu2 bwd", str(N, "x", F), median_ms(be, o.repeats, [&] { be.relu2_backward(dh, a, h); }),
           3.0 * N * F * elem, "GB/s");
  }
  {
    const Shape s{B, T, H, D};
    Buffer x = random_buffer(be, s, dt, 14), y(be, s, dt), r(be, {B * T * H}, DType::f32);
    Buffer cos = random_buffer(be, {T, D / 2}, DType::f32, 15), sin = random_buffer(be, {T, D / 2}, DType::f32, 16);
    report("rope_qknorm fwd", str(B, "x", T, "x", H, "x", D), median_ms(be, o.repeats, [&] {
             be.rope_qknorm_forward(y, r, x, cos, sin, 0, 1e-6);
           }), 2.0 * s.numel() * elem, "GB/s");
    report("rope_qknorm bwd", str(B, "x", T, "x", H, "x", D), median_ms(be, o.repeats, [&] {
             be.rope_qknorm_backward(x, y, y, r, cos, sin, 0);
           }), 3.0 * s.numel() * elem, "GB/s");
  }
  {
    Buffer logits = random_buffer(be, {N, V}, DType::f32, 17, 5.0), losses(be, {N}, DType::f32);
    Buffer dlogits(be, {N, V}, dt), targets(be, {N}, DType::i32);
    std::vector<int32_t> ids(static_cast<size_t>(N));
    for (int64_t i = 0; i < N; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % V);
    be.upload(targets, ids.data(), DType::i32);
    report("cross_entropy fwd", str(N, "x", V), median_ms(be, o.repeats, [&] {
             be.softcap_cross_entropy_forward(losses, Tensor{}, logits, targets, 15.0);
           }), N * V * 4.0, "GB/s");
    report("cross_entropy bwd", str(N, "x", V), median_ms(be, o.repeats, [&] {
             be.softcap_cross_entropy_backward(dlogits, logits, targets, 15.0, 1.0 / N);
           }), N * V * (4.0 + elem), "GB/s");
    Buffer table = random_buffer(be, {V, C}, DType::f32, 18), emb(be, {N, C}, dt), dtable(be, {V, C}, DType::f32);
    report("embedding fwd", str(N, "x", C), median_ms(be, o.repeats, [&] { be.embedding_forward(emb, targets, table); }),
           N * C * (4.0 + elem), "GB/s");
    report("embedding bwd", str(N, "x", C), median_ms(be, o.repeats, [&] { be.embedding_backward(dtable, emb, targets); }),
           N * C * elem + V * C * 8.0, "GB/s");
  }
  // ---- optimizer ----
  {
    Buffer g = random_buffer(be, {F, C}, DType::f32, 19, 0.01), x(be, {F, C}, DType::f32);
    const double flops = 5.0 * (2.0 * C * C * F * 2 + 2.0 * C * C * C);  // per iteration: X X^T, B X, A A
    report("newton_schulz x5", str(F, "x", C), median_ms(be, o.repeats, [&] {
             be.newton_schulz(x, g, 5, 3.4445, -4.7750, 2.0315);
           }), flops, "TFLOP/s");
    Buffer p = random_buffer(be, {V, C}, DType::f32, 20), gr = random_buffer(be, {V, C}, DType::f32, 21);
    Buffer m(be, {V, C}, DType::f32), vv(be, {V, C}, DType::f32);
    report("adamw", str(V, "x", C), median_ms(be, o.repeats, [&] {
             be.adamw_update(p, gr, m, vv, 1e-3, 0.8, 0.95, 1e-10, 0.0, 1);
           }), V * C * 4.0 * 7, "GB/s");
  }
  std::printf("memory in use: %.2f GiB\n", static_cast<double>(be.memory_in_use_bytes()) / (1u << 30));
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << "[\n";
    for (size_t i = 0; i < results.size(); ++i)
      out << "  {\"op\": \"" << results[i].op << "\", \"shape\": \"" << results[i].shape << "\", \"ms\": " << results[i].ms
          << ", \"rate\": " << results[i].rate << ", \"unit\": \"" << results[i].unit << "\"}"
          << (i + 1 < results.size() ? ",\n" : "\n");
    out << "]\n";
  }
  return 0;
}

}  // namespace
}  // namespace ct

int main(int argc, char** argv) {
  ct::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--backend") o.backend = value();
    else if (arg == "--matmul-precision") o.matmul_precision = value();
    else if (arg == "--dtype") o.dtype = value() == "f32" ? ct::DType::f32 : ct::DType::bf16;
    else if (arg == "--repeats") o.repeats = std::stoi(value());
    else if (arg == "--rows") o.rows = std::stoll(value());
    else if (arg == "--json") o.json = value();
    else if (arg == "--also-attention") o.also_attention = value();
    else {
      std::fprintf(stderr, "usage: backend_ops_bench [--backend cuda] [--matmul-precision bf16|f32] [--dtype bf16|f32] "
                           "[--repeats N] [--rows N] [--json FILE] [--also-attention cudnn]\n");
      return 2;
    }
  }
  try {
    return ct::run(o);
  } catch (const ct::Error& e) {
    std::fprintf(stderr, "backend_ops_bench: %s\n", e.what());
    return 1;
  }
}
