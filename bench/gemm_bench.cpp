// GEMM and memory-bandwidth ceilings of this CPU, the numbers later speed work divides by.
//
//   build/release/bench/gemm_bench [--tokens 16384] [--repeats 3] [--models cpu-small,baseline] [--square 4096]
//                                  [--threads 0] [--clock wall|thread-cpu] [--triad 1]
//
// For every linear layer of the model shapes (x [tokens, in], W [out, in]) it times the three GEMMs
// of a training step: forward y = x W^T (NT), input gradient dx = dy W (NN) and weight gradient
// dW = dy^T x (TN), then one large square GEMM, with each library side by side:
//   openblas-f32   cblas_sgemm of OpenBLAS's OpenMP build (core type as loaded, printed)
//   blis-f32       cblas_sgemm of BLIS's OpenMP build (its kernel configuration printed)
//   onednn-f32     dnnl_sgemm
//   onednn-mm-f32  oneDNN's matmul primitive, f32
//   chosen-f32     the library the CPU backend chooses for the product's transpose case
//                  (gemm_library.h: default_gemm_libraries(), printed), so its total is the step's
//   onednn-mm-bf16 oneDNN's matmul primitive, bf16 inputs, f32 output (AVX512_BF16 or AMX kernels)
//   own-bf16       clocktrain's own bf16 GEMM, what the CPU backend's bf16 products run where it
//                  applies: AMX tiles where usable (amx_gemm.h), else AVX512-BF16 dot products
//                  (dot_gemm.h); bf16 inputs, f32 output; "-" where it does not apply
//   chosen-bf16    the CPU backend's bf16 product as it runs in a step (onednn_matmul.h: own-bf16
//                  where it applies, else oneDNN's matmul), so its total is the step's
// The bf16 columns only where the CPU level in use has a bf16 engine (docs/cpu.md); the libraries
// follow CLOCKTRAIN_CPU_MAX_ISA, so `CLOCKTRAIN_CPU_MAX_ISA=avx2 gemm_bench` measures the AVX2 kernels.
// Calls are interleaved (one call of each library per round, best of the rounds) so that a noisy,
// shared machine penalises every library alike. Last, a STREAM-like triad a = b + s c measures
// memory bandwidth, once on arrays far larger than the caches and once on arrays that fit L2.
// --threads 0 uses every core. --clock thread-cpu (with --threads 1) times each call by the calling
// thread's CPU time, which a shared, loaded machine does not inflate: use it to compare libraries
// when other work is running; wall time (the default) is what a training step sees.
#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <unordered_map>
#include <string>
#include <vector>

#include "backend/cpu/amx_gemm.h"
#include "backend/cpu/dot_gemm.h"
#include "backend/cpu/onednn_matmul.h"
#include "backend/cpu/bf16.h"
#include "backend/cpu/cpu_level.h"
#include "backend/cpu/cpu_peak.h"
#include "backend/cpu/gemm_library.h"
#include "util/threads.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool use_thread_cpu_clock = false;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Seconds one call of fn takes, by the chosen clock.
double time_call(const std::function<void()>& fn) {
  if (use_thread_cpu_clock) {
    double start = thread_cpu_seconds();
    fn();
    return thread_cpu_seconds() - start;
  }
  auto start = Clock::now();
  fn();
  return seconds_since(start);
}

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

struct GemmShape {
  std::string name;
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  double flop() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

// A row-major [rows, cols] matrix seen by oneDNN, possibly transposed: dims {rows', cols'} of op(X).
dnnl::memory::desc matrix_desc(int64_t rows, int64_t cols, bool transposed, dnnl::memory::data_type type) {
  // op(X) is [rows, cols]; X is stored [cols, rows] when transposed.
  dnnl::memory::dims strides = transposed ? dnnl::memory::dims{1, rows} : dnnl::memory::dims{cols, 1};
  return dnnl::memory::desc({rows, cols}, type, strides);
}

// One oneDNN matmul c = op(a) op(b) with its primitive built once (as a backend would cache it).
class OneDnnMatmul {
 public:
  OneDnnMatmul(dnnl::engine& engine, const GemmShape& s, dnnl::memory::data_type input_type, void* a, void* b,
               float* c)
      : engine_(engine), stream_(engine) {
    auto a_md = matrix_desc(s.m, s.k, s.transpose_a, input_type);
    auto b_md = matrix_desc(s.k, s.n, s.transpose_b, input_type);
    auto c_md = matrix_desc(s.m, s.n, false, dnnl::memory::data_type::f32);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine_);
    implementation_ = pd.impl_info_str();
    primitive_ = dnnl::matmul(pd);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(a_md, engine_, a)},
             {DNNL_ARG_WEIGHTS, dnnl::memory(b_md, engine_, b)},
             {DNNL_ARG_DST, dnnl::memory(c_md, engine_, c)}};
  }
  void run() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  const std::string& implementation() const { return implementation_; }

 private:
  dnnl::engine& engine_;
  dnnl::stream stream_;
  dnnl::matmul primitive_;
  std::unordered_map<int, dnnl::memory> args_;
  std::string implementation_;
};

struct Contender {
  std::string name;
  std::function<void()> call;
  double best_seconds = 1e300;
};

std::vector<GemmShape> model_shapes(const std::string& model, int64_t tokens) {
  int64_t width = model == "baseline" ? 640 : 256, vocab = 8192;
  struct Layer {
    const char* name;
    int64_t in, out;
  };
  std::vector<Layer> layers = {{"qkv", width, 3 * width},
                               {"attn_out", width, width},
                               {"mlp_up", width, 4 * width},
                               {"mlp_down", 4 * width, width},
                               {"lm_head", width, vocab}};
  std::vector<GemmShape> shapes;
  for (const Layer& l : layers) {
    shapes.push_back({model + " " + l.name + " fwd", tokens, l.out, l.in, false, true});   // y = x W^T
    shapes.push_back({model + " " + l.name + " dx", tokens, l.in, l.out, false, false});   // dx = dy W
    shapes.push_back({model + " " + l.name + " dW", l.out, l.in, tokens, true, false});    // dW = dy^T x
  }
  return shapes;
}

// The columns of the table: every f32 library, and the bf16 ones where the CPU level in use has a bf16
// engine (oneDNN has no bf16 matmul on an AVX2 CPU). The own-bf16 column is "-" where it does not apply.
std::vector<std::string> column_names() {
  std::vector<std::string> names = {"openblas-f32", "blis-f32", "onednn-f32", "onednn-mm-f32", "chosen-f32"};
  if (ct::cpu_level_at_least(ct::CpuLevel::avx512_bf16)) {
    names.push_back("onednn-mm-bf16");
    names.push_back("own-bf16");
    names.push_back("chosen-bf16");
  }
  return names;
}

void bench_gemms(const std::vector<GemmShape>& shapes, int repeats, dnnl::engine& engine,
                 const ct::GemmLibraries& chosen) {
  const std::vector<std::string> columns = column_names();
  const bool bf16 = columns.size() > 5;
  std::printf("%-28s %6s %6s %6s %3s |", "shape", "M", "N", "K", "op");
  for (const auto& c : columns) std::printf(" %14s", c.c_str());
  std::printf("  (GFLOP/s, best of %d)\n", repeats);
  std::vector<double> totals_seconds(columns.size(), 0.0);
  std::vector<bool> everywhere(columns.size(), true);
  double total_flop = 0;
  for (const GemmShape& s : shapes) {
    size_t a_size = static_cast<size_t>(s.m * s.k), b_size = static_cast<size_t>(s.k * s.n);
    std::vector<float> a(a_size), b(b_size), c(static_cast<size_t>(s.m * s.n));
    for (size_t i = 0; i < a_size; ++i) a[i] = static_cast<float>((i * 7 % 13)) * 0.01f;
    for (size_t i = 0; i < b_size; ++i) b[i] = static_cast<float>((i * 5 % 11)) * 0.01f;
    std::vector<uint16_t> a16(a_size), b16(b_size);
    for (size_t i = 0; i < a_size; ++i) a16[i] = ct::float_to_bf16(a[i]);
    for (size_t i = 0; i < b_size; ++i) b16[i] = ct::float_to_bf16(b[i]);
    int64_t lda = s.transpose_a ? s.m : s.k, ldb = s.transpose_b ? s.k : s.n;
    auto library = [&](const ct::GemmLibraries& l) {
      return [&, l] {
        ct::sgemm_row_major(l, s.transpose_a, s.transpose_b, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                            c.data(), s.n);
      };
    };
    OneDnnMatmul mm_f32(engine, s, dnnl::memory::data_type::f32, a.data(), b.data(), c.data());
    std::unique_ptr<OneDnnMatmul> mm_bf16;
    if (bf16)
      mm_bf16 = std::make_unique<OneDnnMatmul>(engine, s, dnnl::memory::data_type::bf16, a16.data(), b16.data(),
                                               c.data());
    std::vector<Contender> contenders = {{"openblas-f32", library(ct::GemmLibraries::all(ct::GemmLibrary::openblas))},
                                         {"blis-f32", library(ct::GemmLibraries::all(ct::GemmLibrary::blis))},
                                         {"onednn-f32", library(ct::GemmLibraries::all(ct::GemmLibrary::onednn))},
                                         {"onednn-mm-f32", [&] { mm_f32.run(); }},
                                         {"chosen-f32", library(chosen)}};
    if (bf16) contenders.push_back({"onednn-mm-bf16", [&] { mm_bf16->run(); }});
    if (bf16 && ct::amx_gemm_handles(s.transpose_a, s.transpose_b, s.m, s.n, s.k))
      contenders.push_back({"own-bf16", [&] {
                              ct::amx_gemm_bf16(s.transpose_a, s.transpose_b, s.m, s.n, s.k, 1.0f, a16.data(), lda,
                                                b16.data(), ldb, 0.0f, c.data(), false, s.n);
                            }});
    else if (bf16 && ct::dot_gemm_handles(s.transpose_a, s.transpose_b, s.m, s.n, s.k))
      contenders.push_back({"own-bf16", [&] {
                              ct::dot_gemm_bf16(s.transpose_a, s.transpose_b, s.m, s.n, s.k, 1.0f, a16.data(), lda,
                                                b16.data(), ldb, 0.0f, c.data(), false, s.n);
                            }});
    if (bf16)
      contenders.push_back({"chosen-bf16", [&] {
                              ct::bf16_gemm_row_major(s.transpose_a, s.transpose_b, s.m, s.n, s.k, 1.0f, a16.data(),
                                                      lda, b16.data(), ldb, 0.0f, c.data(), false, s.n);
                            }});
    for (Contender& contender : contenders) contender.call();  // warm-up
    for (int round = 0; round < repeats; ++round)
      for (Contender& contender : contenders)
        contender.best_seconds = std::min(contender.best_seconds, time_call(contender.call));
    std::printf("%-28s %6ld %6ld %6ld  %c%c |", s.name.c_str(), static_cast<long>(s.m), static_cast<long>(s.n),
                static_cast<long>(s.k), s.transpose_a ? 'T' : 'N', s.transpose_b ? 'T' : 'N');
    for (size_t i = 0; i < columns.size(); ++i) {
      auto contender = std::find_if(contenders.begin(), contenders.end(),
                                    [&](const Contender& x) { return x.name == columns[i]; });
      if (contender != contenders.end()) {
        std::printf(" %14.1f", s.flop() / contender->best_seconds / 1e9);
        totals_seconds[i] += contender->best_seconds;
      } else {
        std::printf(" %14s", "-");
        everywhere[i] = false;
      }
    }
    std::printf("\n");
    total_flop += s.flop();
    static bool printed_implementations = false;
    if (!printed_implementations) {
      std::printf("  (oneDNN matmul kernels: f32 %s, bf16 %s)\n", mm_f32.implementation().c_str(),
                  mm_bf16 ? mm_bf16->implementation().c_str() : "none: no bf16 engine at this CPU level");
      printed_implementations = true;
    }
  }
  std::printf("%-28s %30s |", "all of the above", "");
  for (size_t i = 0; i < columns.size(); ++i) {
    if (everywhere[i]) std::printf(" %14.1f", total_flop / totals_seconds[i] / 1e9);
    else std::printf(" %14s", "-");
  }
  std::printf("   (total FLOP / total time)\n\n");
}

// a = b + s c over `count` floats per array; bytes moved = 3 * 4 * count (read b, c; write a).
double triad_gbytes_per_second(int64_t count, int repeats) {
  std::vector<float> a(static_cast<size_t>(count)), b(a.size()), c(a.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) a[i] = 0, b[i] = 1, c[i] = 2;  // first touch by the same threads
  double best = 1e300;
  float* pa = a.data();
  const float* pb = b.data();
  const float* pc = c.data();
  for (int r = 0; r < repeats; ++r) {
    best = std::min(best, time_call([&] {
#pragma omp parallel for simd schedule(static)
      for (int64_t i = 0; i < count; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    }));
  }
  if (a[static_cast<size_t>(count / 2)] != 7.0f) std::printf("triad: wrong result\n");
  return 3.0 * 4.0 * static_cast<double>(count) / best / 1e9;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> parts;
  std::stringstream stream(list);
  std::string part;
  while (std::getline(stream, part, ',')) parts.push_back(part);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t tokens = 16384, square = 4096;
  int repeats = 3, threads_wanted = 0, triad = 1;
  std::string models = "cpu-small,baseline", clock = "wall";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--tokens") tokens = std::stoll(value);
    else if (flag == "--repeats") repeats = std::stoi(value);
    else if (flag == "--models") models = value;
    else if (flag == "--square") square = std::stoll(value);
    else if (flag == "--threads") threads_wanted = std::stoi(value);
    else if (flag == "--clock") clock = value;
    else if (flag == "--triad") triad = std::stoi(value);
    else {
      std::fprintf(stderr, "gemm_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // one line at a time, also into a file
  int threads = ct::set_thread_count(threads_wanted);
  ct::openblas_set_threads(threads);
  ct::blis_set_threads(threads);
  if (clock != "wall" && clock != "thread-cpu") {
    std::fprintf(stderr, "gemm_bench: --clock must be wall or thread-cpu, got %s\n", clock.c_str());
    return 2;
  }
  if (clock == "thread-cpu" && threads != 1) {
    std::fprintf(stderr, "gemm_bench: --clock thread-cpu needs --threads 1 (it times the calling thread only)\n");
    return 2;
  }
  use_thread_cpu_clock = clock == "thread-cpu";
  const ct::CpuPeak peak = ct::cpu_theoretical_peak(threads);
  std::printf("gemm_bench: %d threads, %s clock; %s, CPU level %s (theoretical f32 peak %.1f GFLOP/s: %s); "
              "OpenBLAS %s; BLIS %s; oneDNN %d.%d.%d; load average %s\n",
              threads, clock.c_str(), ct::cpu_info().model_name.c_str(), ct::cpu_level_description().c_str(),
              peak.f32_flops() / 1e9, peak.describe(false).c_str(), ct::openblas_description().c_str(),
              ct::blis_description().c_str(), dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
              load_average().c_str());
  const ct::GemmLibraries chosen = ct::default_gemm_libraries();
  std::printf("chosen-f32: %s\n", ct::gemm_libraries_description(chosen).c_str());
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  std::vector<GemmShape> shapes;
  for (const std::string& model : split(models)) {
    auto more = model_shapes(model, tokens);
    shapes.insert(shapes.end(), more.begin(), more.end());
  }
  if (!shapes.empty()) bench_gemms(shapes, repeats, engine, chosen);
  if (square > 0) bench_gemms({{"square", square, square, square, false, false}}, repeats, engine, chosen);

  if (triad) {
    std::printf("triad a = b + 3 c (f32, %d threads, %s clock):\n", threads, clock.c_str());
    std::printf("  3 x 512 MiB arrays (memory): %8.1f GB/s\n", triad_gbytes_per_second(int64_t{1} << 27, 5));
    std::printf("  3 x 256 KiB arrays (L2):      %8.1f GB/s\n", triad_gbytes_per_second(int64_t{1} << 16, 1000));
  }
  std::printf("load average at the end: %s\n", load_average().c_str());
  return 0;
}
