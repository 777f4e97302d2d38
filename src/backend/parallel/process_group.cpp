#include "backend/parallel/process_group.h"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

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

ProcessGroup* g_world = nullptr;

}  // namespace

struct ProcessGroup::Impl {
  int rank = 0, size = 1;
  // The worker thread and its queue of reductions.
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> queue;
  int64_t running = 0;  // tasks taken but not finished
  std::string failure;  // the first error of a queued task
  bool stopping = false;
  std::thread worker;
  std::vector<char> scratch;  // this process's block of a reduce-scatter

  void run_worker() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping, nothing left
      std::function<void()> task = std::move(queue.front());
      queue.pop_front();
      ++running;
      lock.unlock();
      std::string error;
      try {
        task();
      } catch (const std::exception& e) {
        error = e.what();
      }
      lock.lock();
      --running;
      if (!error.empty() && failure.empty()) failure = error;
      changed.notify_all();
    }
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return queue.empty() && running == 0; });
    if (!failure.empty()) {
      const std::string error = failure;
      failure.clear();
      throw Error(error);
    }
  }

  // sum over processes, scaled: each process sums and scales one contiguous block (counts[r]
  // elements), then every block is gathered to every process.
  template <typename T>
  void reduce(T* data, int64_t n, double factor, MPI_Datatype type) {
    constexpr int64_t kChunk = int64_t{1} << 28;  // MPI counts are int
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      const int64_t count = std::min(kChunk, n - begin);
      T* x = data + begin;
      std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
      const int64_t base = count / size, extra = count % size;
      int64_t offset = 0;
      for (int r = 0; r < size; ++r) {
        counts[static_cast<size_t>(r)] = static_cast<int>(base + (r < extra ? 1 : 0));
        displs[static_cast<size_t>(r)] = static_cast<int>(offset);
        offset += counts[static_cast<size_t>(r)];
      }
      const int mine = counts[static_cast<size_t>(rank)];
      scratch.resize(static_cast<size_t>(std::max(mine, 1)) * sizeof(T));
      T* block = reinterpret_cast<T*>(scratch.data());
      check_mpi(MPI_Reduce_scatter(x, block, counts.data(), type, MPI_SUM, MPI_COMM_WORLD), "MPI_Reduce_scatter");
      if (factor != 1.0)
        for (int i = 0; i < mine; ++i) block[i] = static_cast<T>(block[i] * static_cast<T>(factor));
      check_mpi(MPI_Allgatherv(block, mine, type, x, counts.data(), displs.data(), type, MPI_COMM_WORLD),
                "MPI_Allgatherv");
    }
  }

  void enqueue(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(task));
    }
    changed.notify_all();
  }
};

bool ProcessGroup::available() { return true; }

ProcessGroup::ProcessGroup() : impl_(new Impl) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // SERIALIZED is enough (one thread in MPI at a time, see the header); MULTIPLE is asked for
    // because the worker thread is not the one that initialised MPI.
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    check(provided >= MPI_THREAD_SERIALIZED, "MPI: the library gives thread level ", provided,
          ", clocktrain needs MPI_THREAD_SERIALIZED or above");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &impl_->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl_->size);
  impl_->worker = std::thread([this] { impl_->run_worker(); });
}

ProcessGroup::~ProcessGroup() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->changed.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

ProcessGroup& ProcessGroup::world() {
  // Made once, ended by exit (a function-local static): every process finalises MPI on a normal exit.
  static ProcessGroup group;
  g_world = &group;
  return group;
}

ProcessGroup* ProcessGroup::world_if_started() { return g_world; }

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size; }

std::string ProcessGroup::library_version() const {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, static_cast<size_t>(length));
  const size_t comma = s.find(',');  // "Open MPI v4.1.4, package: ..."
  return comma == std::string::npos ? s : s.substr(0, comma);
}

void ProcessGroup::all_reduce_sum_async(float* data, int64_t n, double factor) {
  impl_->enqueue([this, data, n, factor] { impl_->reduce(data, n, factor, MPI_FLOAT); });
}

void ProcessGroup::all_reduce_sum_async(double* data, int64_t n, double factor) {
  impl_->enqueue([this, data, n, factor] { impl_->reduce(data, n, factor, MPI_DOUBLE); });
}

void ProcessGroup::wait() { impl_->wait(); }

void ProcessGroup::all_reduce_sum(std::vector<double>& values) {
  wait();
  impl_->reduce(values.data(), static_cast<int64_t>(values.size()), 1.0, MPI_DOUBLE);
}

void ProcessGroup::broadcast(void* data, int64_t bytes, int root) {
  wait();
  check(root >= 0 && root < impl_->size, "broadcast: root ", root, " is outside [0, ", impl_->size, ")");
  char* p = static_cast<char*>(data);
  constexpr int64_t kChunk = int64_t{1} << 30;
  for (int64_t begin = 0; begin < bytes; begin += kChunk)
    check_mpi(MPI_Bcast(p + begin, static_cast<int>(std::min(kChunk, bytes - begin)), MPI_BYTE, root, MPI_COMM_WORLD),
              "MPI_Bcast");
}

void ProcessGroup::barrier() {
  wait();
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void ProcessGroup::abort(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] true
}

#else  // no MPI in this build

struct ProcessGroup::Impl {};

bool ProcessGroup::available() { return false; }
ProcessGroup::ProcessGroup() = default;
ProcessGroup::~ProcessGroup() = default;
ProcessGroup& ProcessGroup::world() {
  throw Error(
      "several CPU processes need MPI, and this clocktrain was built without it: install Debian's libopenmpi-dev "
      "(scripts/install-deps.sh does) and build again");
}
ProcessGroup* ProcessGroup::world_if_started() { return nullptr; }
int ProcessGroup::rank() const { return 0; }
int ProcessGroup::size() const { return 1; }
std::string ProcessGroup::library_version() const { return "none"; }
void ProcessGroup::all_reduce_sum_async(float*, int64_t, double) {}
void ProcessGroup::all_reduce_sum_async(double*, int64_t, double) {}
void ProcessGroup::wait() {}
void ProcessGroup::all_reduce_sum(std::vector<double>&) {}
void ProcessGroup::broadcast(void*, int64_t, int) {}
void ProcessGroup::barrier() {}
void ProcessGroup::abort(int exit_code) { std::_Exit(exit_code); }

#endif

}  // namespace ct
