#include "backend/parallel/process_group.h"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "backend/parallel/collectives.h"
#include "backend/parallel/launch.h"
#include "util/error.h"

namespace ct {

namespace {

ProcessGroup* g_world = nullptr;

std::unique_ptr<Collectives> collectives_for(const LaunchEnvironment& env) {
  if (env.launcher == "mpirun") return make_mpi_collectives(env);
  if (env.launcher == "torchrun") return make_gloo_collectives(env);
  throw Error(str("the processes of a data-parallel job meet under mpirun or torchrun; these were launched by ", env.launcher,
                  " (docs/parallel.md)"));
}

}  // namespace

struct ProcessGroup::Impl {
  std::unique_ptr<Collectives> library;  // null once finished
  int rank = 0, size = 1;
  std::string library_version;
  // The worker thread and its queue of reductions.
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> queue;
  int64_t running = 0;  // tasks taken but not finished
  std::string failure;  // the first error of a queued task
  bool stopping = false;
  std::thread worker;

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

  Collectives& connected() {
    check(library != nullptr, "the job's processes were already finished with (ProcessGroup::finish): no "
                              "collective may follow");
    return *library;
  }

  void stop_worker() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    if (worker.joinable()) worker.join();
  }

  void enqueue(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(task));
    }
    changed.notify_all();
  }
};

ProcessGroup::ProcessGroup() : impl_(new Impl) {
  impl_->library = collectives_for(launch_environment_from_process());
  impl_->rank = impl_->library->rank();
  impl_->size = impl_->library->size();
  impl_->library_version = impl_->library->library_version();
  impl_->worker = std::thread([this] { impl_->run_worker(); });
}

ProcessGroup::~ProcessGroup() { impl_->stop_worker(); }

void ProcessGroup::finish() {
  if (impl_->library == nullptr) return;
  wait();
  impl_->stop_worker();
  impl_->library.reset();
}

ProcessGroup& ProcessGroup::world() {
  // Made once, ended by exit (a function-local static): MPI is finalised on a normal exit.
  static ProcessGroup group;
  g_world = &group;
  return group;
}

ProcessGroup* ProcessGroup::world_if_started() { return g_world; }

ProcessGroup* ProcessGroup::of_this_job() {
  return launch_environment_from_process().distributed() ? &world() : nullptr;
}

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size; }
std::string ProcessGroup::library_version() const { return impl_->library_version; }

void ProcessGroup::all_reduce_sum_async(float* data, int64_t n, double factor) {
  Collectives& library = impl_->connected();
  impl_->enqueue([&library, data, n, factor] { library.reduce_sum(data, n, factor); });
}

void ProcessGroup::all_reduce_sum_async(double* data, int64_t n, double factor) {
  Collectives& library = impl_->connected();
  impl_->enqueue([&library, data, n, factor] { library.reduce_sum(data, n, factor); });
}

void ProcessGroup::wait() { impl_->wait(); }

void ProcessGroup::all_reduce_sum(std::vector<double>& values) {
  wait();
  impl_->connected().reduce_sum(values.data(), static_cast<int64_t>(values.size()), 1.0);
}

void ProcessGroup::broadcast(void* data, int64_t bytes, int root) {
  wait();
  check(root >= 0 && root < size(), "broadcast: root ", root, " is outside [0, ", size(), ")");
  impl_->connected().broadcast(data, bytes, root);
}

void ProcessGroup::barrier() {
  wait();
  impl_->connected().barrier();
}

void ProcessGroup::abort(int exit_code) {
  if (impl_->library != nullptr) impl_->library->abort(exit_code);
  std::_Exit(exit_code);  // not reached: [[noreturn]] does not survive the virtual call for the compiler
}

}  // namespace ct
