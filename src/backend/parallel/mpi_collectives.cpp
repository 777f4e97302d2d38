// The collectives over Open MPI (collectives.h), for processes started by mpirun.
//
// A sum is reduced with MPI_Reduce_scatter then gathered with MPI_Allgatherv, rather than by
// MPI_Allreduce, whose algorithms may add in a different order on different processes (and the
// copies of the model would drift apart). With two processes each element is a + b, which is exactly
// what one process adding the same two micro-batches computes.
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "backend/parallel/collectives.h"
#include "util/error.h"

#if CLOCKTRAIN_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: MPI's deprecated C++ bindings need another library
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace ct {

#if CLOCKTRAIN_HAVE_MPI

namespace {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(str("MPI: ", call, " failed: ", std::string(text, static_cast<size_t>(length))));
}

class MpiCollectives final : public Collectives {
 public:
  MpiCollectives() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      // SERIALIZED is enough (one thread in MPI at a time: process_group.h); MULTIPLE is asked for
      // because the process group's worker thread is not the one that initialised MPI.
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
      check(provided >= MPI_THREAD_SERIALIZED, "MPI: the library gives thread level ", provided,
            ", clocktrain needs MPI_THREAD_SERIALIZED or above");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCollectives() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string library_version() const override {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(text, &length);
    std::string s(text, static_cast<size_t>(length));
    const size_t comma = s.find(',');  // "Open MPI v4.1.4, package: ..."
    return comma == std::string::npos ? s : s.substr(0, comma);
  }
  void reduce_sum(float* x, int64_t n, double factor) override { reduce(x, n, factor, MPI_FLOAT); }
  void reduce_sum(double* x, int64_t n, double factor) override { reduce(x, n, factor, MPI_DOUBLE); }
  void broadcast(void* data, int64_t bytes, int root) override {
    char* p = static_cast<char*>(data);
    constexpr int64_t kChunk = int64_t{1} << 30;  // MPI counts are int
    for (int64_t begin = 0; begin < bytes; begin += kChunk)
      check_mpi(MPI_Bcast(p + begin, static_cast<int>(std::min(kChunk, bytes - begin)), MPI_BYTE, root, MPI_COMM_WORLD),
                "MPI_Bcast");
  }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] true
  }

 private:
  // Each process sums and scales one contiguous block (counts[r] elements), then every block is
  // gathered to every process.
  template <typename T>
  void reduce(T* data, int64_t n, double factor, MPI_Datatype type) {
    constexpr int64_t kChunk = int64_t{1} << 28;  // MPI counts are int
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      const int64_t count = std::min(kChunk, n - begin);
      T* x = data + begin;
      std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
      const int64_t base = count / size_, extra = count % size_;
      int64_t offset = 0;
      for (int r = 0; r < size_; ++r) {
        counts[static_cast<size_t>(r)] = static_cast<int>(base + (r < extra ? 1 : 0));
        displs[static_cast<size_t>(r)] = static_cast<int>(offset);
        offset += counts[static_cast<size_t>(r)];
      }
      const int mine = counts[static_cast<size_t>(rank_)];
      scratch_.resize(static_cast<size_t>(std::max(mine, 1)) * sizeof(T));
      T* block = reinterpret_cast<T*>(scratch_.data());
      check_mpi(MPI_Reduce_scatter(x, block, counts.data(), type, MPI_SUM, MPI_COMM_WORLD), "MPI_Reduce_scatter");
      if (factor != 1.0)
        for (int i = 0; i < mine; ++i) block[i] = static_cast<T>(block[i] * static_cast<T>(factor));
      check_mpi(MPI_Allgatherv(block, mine, type, x, counts.data(), displs.data(), type, MPI_COMM_WORLD),
                "MPI_Allgatherv");
    }
  }

  int rank_ = 0, size_ = 1;
  std::vector<char> scratch_;  // this process's block of a reduce-scatter
};

}  // namespace

bool mpi_in_build() { return true; }
std::unique_ptr<Collectives> make_mpi_collectives() { return std::make_unique<MpiCollectives>(); }

#else  // no MPI in this build

bool mpi_in_build() { return false; }
std::unique_ptr<Collectives> make_mpi_collectives() {
  throw Error(
      "CPU processes under mpirun need MPI, and this clocktrain was built without it: install Debian's "
      "libopenmpi-dev (scripts/install-deps.sh does) and build again");
}

#endif

}  // namespace ct
