#pragma once
// The GEMM libraries the CPU backend calls (docs/architecture.md: GEMM from a well-kept library).
//
// OpenBLAS is loaded at run time (dlopen) from its OpenMP build (Debian's libopenblas0-openmp), so
// that its threads are OpenMP's threads (one pool, no oversubscription: inside our own parallel
// regions it runs single-threaded) and so that OPENBLAS_CORETYPE can be set before it initialises:
// OpenBLAS 0.3.21 does not know this processor (Sapphire/Emerald Rapids under KVM) and would pick
// its slowest kernels (Prescott, ~10x slower). When the user has not set OPENBLAS_CORETYPE we set
// the kernels of the CPU level in use (cpu_level.h): "Cooperlake" from avx512_bf16 up, "SkylakeX" at
// avx512, Haswell's (Zen's on AMD) at a lowered avx2.
// Environment: CLOCKTRAIN_OPENBLAS = path of another libopenblas.so.0 (e.g. the pthread build, for
// comparison); CLOCKTRAIN_CPU_GEMM overrides the f32 library choice (GemmLibraries below).
//
// BLIS (Debian's libblis4-openmp, dlopen'ed the same way on first use; CLOCKTRAIN_BLIS = another
// libblis.so.4) has kernels tuned for AMD's Zen cores; a lowered CPU level sets BLIS_ARCH_TYPE.
//
// oneDNN (libdnnl, OpenMP runtime in Debian) provides dnnl_sgemm; it has no f64 GEMM, so f64 always
// goes through OpenBLAS's dgemm.
#include <cstdint>
#include <string>

namespace ct {

enum class GemmLibrary { openblas, onednn, blis };

const char* gemm_library_name(GemmLibrary library);
// "openblas", "onednn" or "blis"; anything else is a ct::Error.
GemmLibrary parse_gemm_library(const std::string& name);

// The f32 library of each transpose case of a product, named by how A and B are read: NN, NT
// (B transposed: the forward products, x W^T), TN (A transposed: the weight gradients, dY^T x) and
// TT. No one library is fastest on every case (docs/performance-journal.md "GEMM library by
// transpose case"), and a product's case is known before it runs, so the choice is made per case:
// the same library for the same product on every run.
struct GemmLibraries {
  GemmLibrary nn, nt, tn, tt;

  static GemmLibraries all(GemmLibrary library) { return {library, library, library, library}; }
  GemmLibrary of(bool transpose_a, bool transpose_b) const {
    return transpose_a ? (transpose_b ? tt : tn) : (transpose_b ? nt : nn);
  }
  bool uses(GemmLibrary library) const { return nn == library || nt == library || tn == library || tt == library; }
  bool operator==(const GemmLibraries&) const = default;
};

// "openblas" when one library takes every case, else each library with its cases:
// "onednn (NN, NT), openblas (TN, TT)".
std::string gemm_libraries_description(const GemmLibraries& libraries);
// CLOCKTRAIN_CPU_GEMM's forms: a library for every case ("blis"), or cases and libraries
// ("nt=onednn,tn=openblas": the cases not named keep `base`'s). A ct::Error names the variable,
// the part it could not read and what it expected.
GemmLibraries parse_gemm_libraries(const std::string& spec, const GemmLibraries& base);
// The default choice (the same at every CPU level measured), then CLOCKTRAIN_CPU_GEMM over it.
GemmLibraries default_gemm_libraries();

// Row-major C[M,N] = alpha * op(A) op(B) + beta * C with leading dimensions lda, ldb, ldc, through
// the library of the product's transpose case.
void sgemm_row_major(const GemmLibraries& libraries, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                     float* c, int64_t ldc);
void dgemm_row_major(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, double alpha,
                     const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
                     int64_t ldc);
// The same, picked by element type: f32 through `library`, f64 through dgemm. Safe to call from
// inside an OpenMP parallel region, where both libraries run on the calling thread alone.
inline void gemm_row_major(const GemmLibraries& libraries, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                           int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                           float* c, int64_t ldc) {
  sgemm_row_major(libraries, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
inline void gemm_row_major(const GemmLibraries&, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                           double alpha, const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                           double* c, int64_t ldc) {
  dgemm_row_major(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Loads OpenBLAS (once) and tells which build and kernel set it runs, and who chose the kernel set:
// "Cooperlake (chosen by clocktrain for the CPU level; openmp build, /usr/lib/.../libopenblas.so.0)".
// Throws a ct::Error when the library cannot be loaded.
std::string openblas_description();
std::string openblas_core_name();         // "Cooperlake"
std::string openblas_core_description();  // "Cooperlake (chosen by clocktrain for the CPU level)"
// The kernel set clocktrain sets OPENBLAS_CORETYPE to for the CPU level in use (cpu_level.h), or
// nullptr at a CPU's own level below avx512, where OpenBLAS's detection stands: "Cooperlake" from
// avx512_bf16 up (OpenBLAS 0.3.21 does not know the newest CPUs and would take its slowest kernels
// there), "SkylakeX" at avx512, "Zen" or "Haswell" at a lowered avx2, "Prescott" below.
const char* openblas_core_type_for_level();
// Sets OpenBLAS's thread count (its OpenMP build follows OpenMP's count in any case).
void openblas_set_threads(int threads);

// BLIS (loaded on first use; a ct::Error when it cannot be): its thread count, and its kernel
// configuration, who chose it and its path ("skx (chosen by clocktrain for the CPU level;
// /usr/lib/.../blis-openmp/libblis.so.4)").
void blis_set_threads(int threads);
std::string blis_description();

}  // namespace ct
