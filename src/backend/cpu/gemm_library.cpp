#include "backend/cpu/gemm_library.h"

#include <cblas.h>
#include <dlfcn.h>
#include <dnnl.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "backend/cpu/cpu_level.h"
#include "util/error.h"

#ifndef CLOCKTRAIN_OPENBLAS_PATH
#define CLOCKTRAIN_OPENBLAS_PATH "libopenblas.so.0"
#endif
#ifndef CLOCKTRAIN_BLIS_PATH
#define CLOCKTRAIN_BLIS_PATH "libblis.so.4"
#endif

namespace ct {

namespace {

// The OpenBLAS entry points we use, resolved from the dlopen'ed library. The types come from
// cblas.h; nothing here links against OpenBLAS directly.
struct OpenBlasApi {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  decltype(&openblas_get_corename) get_corename = nullptr;
  decltype(&openblas_get_parallel) get_parallel = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  std::string path;
  std::string core_chosen_by;  // who chose the kernel set: choose_openblas_core_type()
};

// OPENBLAS_CORETYPE is read once, when the library initialises, so it is set before dlopen: the
// level's kernel set (openblas_core_type_for_level), unless the variable is set already. Returns who
// chose, for the backend's description: a variable set outside clocktrain (some machine images set
// one for every program) is worth seeing in the start line: on a Zen 5, Haswell's kernels ran
// cpu-small's products at 242 GFLOP/s, Cooperlake's at 425. A set value equal to the level's is
// said so, whoever set it: `clocktrain run`'s evaluator inherits the variable its parent set.
std::string choose_openblas_core_type() {
  const char* core = openblas_core_type_for_level();
  const char* set_already = std::getenv("OPENBLAS_CORETYPE");
  if (set_already && *set_already) {
    if (core && std::string(set_already) == core) return "OPENBLAS_CORETYPE set to the level's choice";
    return str("OPENBLAS_CORETYPE set outside clocktrain", core ? str("; the level's would be ", core) : "");
  }
  if (!core) return "OpenBLAS's own choice";
  ::setenv("OPENBLAS_CORETYPE", core, 1);
  return "chosen by clocktrain for the CPU level";
}

template <typename Fn>
Fn resolve(void* handle, const std::string& path, const char* symbol) {
  void* address = ::dlsym(handle, symbol);
  check(address != nullptr, path, " has no symbol ", symbol);
  return reinterpret_cast<Fn>(address);
}

// A library loaded once (dlopen, RTLD_LOCAL: its symbols never clash with another BLAS's) and its
// entry points; or why it could not be, thrown again on every later use.
template <typename Api>
struct Loaded {
  Api api;
  std::string error;
  const Api& get() const {
    if (!error.empty()) throw Error(error);
    return api;
  }
};

// Opens `default_path`, or the path in `override_variable`, and hands the handle to bind(handle, api).
template <typename Api, typename Bind>
Loaded<Api> load_library(const char* name, const char* override_variable, const char* default_path,
                         const char* package, Bind bind) {
  Loaded<Api> loaded;
  try {
    const char* override_path = std::getenv(override_variable);
    loaded.api.path = override_path && *override_path ? override_path : default_path;
    void* handle = ::dlopen(loaded.api.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = ::dlerror();
      fail("cannot load ", name, " from ", loaded.api.path, ": ", why ? why : "unknown error", " (install ", package,
           ": scripts/install-deps.sh)");
    }
    bind(handle, loaded.api);
  } catch (const Error& e) {
    loaded.error = e.what();
  }
  return loaded;
}

const OpenBlasApi& openblas() {
  static const Loaded<OpenBlasApi> loaded = [] {
    const std::string core_chosen_by = choose_openblas_core_type();
    Loaded<OpenBlasApi> loaded = load_library<OpenBlasApi>(
        "OpenBLAS", "CLOCKTRAIN_OPENBLAS", CLOCKTRAIN_OPENBLAS_PATH, "libopenblas0-openmp",
        [](void* handle, OpenBlasApi& api) {
          api.sgemm = resolve<decltype(api.sgemm)>(handle, api.path, "cblas_sgemm");
          api.dgemm = resolve<decltype(api.dgemm)>(handle, api.path, "cblas_dgemm");
          api.get_corename = resolve<decltype(api.get_corename)>(handle, api.path, "openblas_get_corename");
          api.get_parallel = resolve<decltype(api.get_parallel)>(handle, api.path, "openblas_get_parallel");
          api.set_num_threads = resolve<decltype(api.set_num_threads)>(handle, api.path, "openblas_set_num_threads");
        });
    loaded.api.core_chosen_by = core_chosen_by;
    return loaded;
  }();
  return loaded.get();
}

// BLIS (Debian's libblis4-openmp: OpenMP threads, like OpenBLAS's build), through its CBLAS layer.
// Optional: loaded on first use, and a clear error when it is not installed.
struct BlisApi {
  decltype(&cblas_sgemm) sgemm = nullptr;
  void (*set_num_threads)(int64_t) = nullptr;  // bli_thread_set_num_threads(dim_t)
  void (*init)() = nullptr;                    // bli_init: the kernel table, and the configuration chosen
  int (*arch_query_id)() = nullptr;            // arch_t, an enum
  const char* (*arch_string)(int) = nullptr;
  std::string path;
  std::string arch_chosen_by;  // choose_blis_arch()
};

// BLIS picks its kernels by CPUID when it initialises (on its first call) unless BLIS_ARCH_TYPE
// holds a configuration's number (arch_t; BLIS 0.9 reads no names). From avx512 up, and at a lowered
// level, clocktrain names the level's configuration: "skx" from avx512 up (BLIS 0.9 does not know Zen
// 5 and took its "generic" kernels there, 88 GFLOP/s where skx's ran at 439), "zen3" or "haswell" at
// avx2. The number is found by name among the first configurations (bli_arch_string reads a static
// table, before BLIS initialises); a BLIS without that name keeps its own choice. Returns who chose
// (a set number equal to the level's is said so, as for OPENBLAS_CORETYPE).
std::string choose_blis_arch(const BlisApi& api) {
  const char* set_already = std::getenv("BLIS_ARCH_TYPE");
  const bool own_level = cpu_level() < CpuLevel::avx512 && cpu_level() >= cpu_info().level;
  const bool amd = cpu_info().vendor == "AuthenticAMD";
  const std::string wanted = own_level                          ? ""
                             : cpu_level() >= CpuLevel::avx512 ? "skx"
                             : cpu_level() == CpuLevel::avx2   ? (amd ? "zen3" : "haswell")
                                                               : "generic";
  int wanted_id = -1;
  constexpr int kFirstConfigurations = 8;  // skx knl knc haswell sandybridge penryn zen3 zen2 (BLIS 0.9)
  for (int id = 0; id < kFirstConfigurations && !wanted.empty(); ++id) {
    const char* name = api.arch_string(id);
    if (name && wanted == name) wanted_id = id;
  }
  if (set_already && *set_already) {
    if (wanted_id >= 0 && std::to_string(wanted_id) == set_already) return "BLIS_ARCH_TYPE set to the level's choice";
    return "BLIS_ARCH_TYPE set outside clocktrain";
  }
  if (own_level) return "BLIS's own choice";
  if (wanted_id < 0) return str("BLIS's own choice (it has no configuration named ", wanted, ")");
  ::setenv("BLIS_ARCH_TYPE", std::to_string(wanted_id).c_str(), 1);
  return "chosen by clocktrain for the CPU level";
}

const BlisApi& blis() {
  static const Loaded<BlisApi> loaded = load_library<BlisApi>(
      "BLIS", "CLOCKTRAIN_BLIS", CLOCKTRAIN_BLIS_PATH, "libblis4-openmp", [](void* handle, BlisApi& api) {
        api.sgemm = resolve<decltype(api.sgemm)>(handle, api.path, "cblas_sgemm");
        api.set_num_threads = resolve<decltype(api.set_num_threads)>(handle, api.path, "bli_thread_set_num_threads");
        api.arch_query_id = resolve<decltype(api.arch_query_id)>(handle, api.path, "bli_arch_query_id");
        api.arch_string = resolve<decltype(api.arch_string)>(handle, api.path, "bli_arch_string");
        api.init = resolve<decltype(api.init)>(handle, api.path, "bli_init");
        api.arch_chosen_by = choose_blis_arch(api);
        // Now, not on the first product: with BLIS_ARCH_TYPE set, bli_arch_query_id before BLIS has
        // initialised aborts the process ("Accessed uninitialized context in gks").
        api.init();
      });
  return loaded.get();
}

CBLAS_TRANSPOSE cblas_transpose(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }

// BLAS takes int dimensions (LP64 build).
int blas_int(int64_t value, const char* what) {
  check(value >= 0 && value <= INT32_MAX, "gemm: ", what, " = ", value, " does not fit the BLAS int");
  return static_cast<int>(value);
}

}  // namespace

const char* gemm_library_name(GemmLibrary library) {
  switch (library) {
    case GemmLibrary::openblas: return "openblas";
    case GemmLibrary::onednn: return "onednn";
    case GemmLibrary::blis: return "blis";
  }
  return "?";
}

GemmLibrary parse_gemm_library(const std::string& name) {
  for (GemmLibrary library : {GemmLibrary::openblas, GemmLibrary::onednn, GemmLibrary::blis})
    if (name == gemm_library_name(library)) return library;
  fail("CLOCKTRAIN_CPU_GEMM: unknown GEMM library '", name, "' (expected openblas, onednn or blis)");
}

namespace {

// The transpose cases by index: bit 1 says A is transposed, bit 0 that B is. Lower case in
// CLOCKTRAIN_CPU_GEMM, upper case in descriptions.
constexpr const char* kCaseNames[4] = {"nn", "nt", "tn", "tt"};
constexpr const char* kCaseLabels[4] = {"NN", "NT", "TN", "TT"};

GemmLibrary& library_of_case(GemmLibraries& libraries, int index) {
  GemmLibrary* cases[4] = {&libraries.nn, &libraries.nt, &libraries.tn, &libraries.tt};
  return *cases[index];
}

}  // namespace

std::string gemm_libraries_description(const GemmLibraries& libraries) {
  if (libraries == GemmLibraries::all(libraries.nn)) return gemm_library_name(libraries.nn);
  std::string description;
  for (GemmLibrary library : {GemmLibrary::openblas, GemmLibrary::onednn, GemmLibrary::blis}) {
    std::string cases;
    for (int index = 0; index < 4; ++index)
      if (libraries.of(index & 2, index & 1) == library) cases += str(cases.empty() ? "" : ", ", kCaseLabels[index]);
    if (cases.empty()) continue;
    description += str(description.empty() ? "" : ", ", gemm_library_name(library), " (", cases, ")");
  }
  return description;
}

GemmLibraries parse_gemm_libraries(const std::string& spec, const GemmLibraries& base) {
  if (spec.find('=') == std::string::npos) return GemmLibraries::all(parse_gemm_library(spec));
  GemmLibraries libraries = base;
  size_t begin = 0;
  while (begin <= spec.size()) {
    const size_t end = std::min(spec.find(',', begin), spec.size());
    const std::string part = spec.substr(begin, end - begin);
    const size_t equals = part.find('=');
    const std::string name = part.substr(0, equals);
    int index = 0;
    while (index < 4 && name != kCaseNames[index]) ++index;
    check(equals != std::string::npos && index < 4, "CLOCKTRAIN_CPU_GEMM: cannot read '", part, "' in '", spec,
          "' (expected a library, or CASE=LIBRARY parts separated by commas, CASE one of nn, nt, tn, tt)");
    library_of_case(libraries, index) = parse_gemm_library(part.substr(equals + 1));
    begin = end + 1;
  }
  return libraries;
}

// oneDNN's dnnl_sgemm for the products whose A is read as stored (NN, NT), OpenBLAS for those whose
// A is transposed (TN, TT: the weight gradients, K = the tokens), at every level: on cpu-small's
// products oneDNN leads OpenBLAS by up to 20% on NT (and on NN from avx512 up; level at avx2) and
// trails it by up to 30% on TN
// (docs/performance-journal.md "GEMM library by transpose case"). BLIS never leads by enough to be a
// third library to load.
GemmLibraries default_gemm_libraries() {
  const GemmLibraries by_case = {.nn = GemmLibrary::onednn, .nt = GemmLibrary::onednn, .tn = GemmLibrary::openblas,
                                 .tt = GemmLibrary::openblas};
  const char* choice = std::getenv("CLOCKTRAIN_CPU_GEMM");
  if (choice && *choice) return parse_gemm_libraries(choice, by_case);
  return by_case;
}

void sgemm_row_major(const GemmLibraries& libraries, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                     float* c, int64_t ldc) {
  const GemmLibrary library = libraries.of(transpose_a, transpose_b);
  if (library == GemmLibrary::blis) {
    blis().sgemm(CblasRowMajor, cblas_transpose(transpose_a), cblas_transpose(transpose_b), blas_int(m, "M"),
                 blas_int(n, "N"), blas_int(k, "K"), alpha, a, blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c,
                 blas_int(ldc, "ldc"));
    return;
  }
  if (library == GemmLibrary::onednn) {
    cpu_level();  // the level's limit reaches oneDNN before its first kernel (cpu_level.h)
    dnnl_status_t status = dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                      ldb, beta, c, ldc);
    check(status == dnnl_success, "gemm: dnnl_sgemm failed with status ", static_cast<int>(status));
    return;
  }
  openblas().sgemm(CblasRowMajor, cblas_transpose(transpose_a), cblas_transpose(transpose_b), blas_int(m, "M"),
                   blas_int(n, "N"), blas_int(k, "K"), alpha, a, blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta,
                   c, blas_int(ldc, "ldc"));
}

void dgemm_row_major(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, double alpha,
                     const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                     int64_t ldc) {
  openblas().dgemm(CblasRowMajor, cblas_transpose(transpose_a), cblas_transpose(transpose_b), blas_int(m, "M"),
                   blas_int(n, "N"), blas_int(k, "K"), alpha, a, blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta,
                   c, blas_int(ldc, "ldc"));
}

const char* openblas_core_type_for_level() {
  const CpuLevel level = cpu_level();
  const bool lowered = level < cpu_info().level;
  return level >= CpuLevel::avx512_bf16 ? "Cooperlake"
         : level == CpuLevel::avx512    ? "SkylakeX"
         : !lowered                     ? nullptr
         : level == CpuLevel::avx2      ? (cpu_info().vendor == "AuthenticAMD" ? "Zen" : "Haswell")
                                        : "Prescott";
}

std::string openblas_core_name() { return openblas().get_corename(); }

std::string openblas_core_description() {
  const OpenBlasApi& api = openblas();
  return str(api.get_corename(), " (", api.core_chosen_by, ")");
}

std::string openblas_description() {
  const OpenBlasApi& api = openblas();
  int parallel = api.get_parallel();  // 0 sequential, 1 pthreads, 2 OpenMP
  const char* build = parallel == 2 ? "openmp build" : parallel == 1 ? "pthread build" : "sequential build";
  return str(api.get_corename(), " (", api.core_chosen_by, "; ", build, ", ", api.path, ")");
}

void openblas_set_threads(int threads) { openblas().set_num_threads(threads); }

void blis_set_threads(int threads) { blis().set_num_threads(threads); }

std::string blis_description() {
  const BlisApi& api = blis();
  return str(api.arch_string(api.arch_query_id()), " (", api.arch_chosen_by, "; ", api.path, ")");
}

}  // namespace ct
