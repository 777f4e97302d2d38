#pragma once
// The processes of one data-parallel job on the host, over Open MPI (launched by `mpirun -np N`):
// the CPU backend's gradient all-reduce and broadcast, the trainer's small host reductions (losses,
// the step's agreed clock), and how NCCL's unique id reaches every GPU process under mpirun.
//
// Why MPI (docs/parallel.md): mpirun already starts the processes on one machine or many
// (`--host`), gives each its rank, carries the collectives over shared memory or TCP, and stops the
// whole job when one process dies; Gloo (the other candidate in Debian) needs a key-value store to
// meet, which Debian's build offers only as a shared file or Redis.
//
// Every reduction here gives the same bits on every process and on every run: a sum is reduced by
// MPI_Reduce_scatter (each element summed by one process, in one order) and then gathered, rather
// than by MPI_Allreduce, whose algorithms may add in a different order on different processes. With
// two processes each element is a + b, which is exactly what one process adding the same two
// micro-batches computes.
//
// Threads: the gradient all-reduce runs on a worker thread of its own (all_reduce_sum_async), so
// that it overlaps the rest of the backward pass; every blocking call first waits for it, so only one
// thread is inside MPI at any time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ct {

class ProcessGroup {
 public:
  // Whether this build has MPI (CMake found it: Debian's libopenmpi-dev).
  static bool available();
  // The job's processes (MPI_COMM_WORLD), initialising MPI on the first call; an error when the
  // build has no MPI. MPI is finalised at exit.
  static ProcessGroup& world();
  // world() when it was made already, else null (no MPI call): for the error path, which must not
  // start MPI only to stop it.
  static ProcessGroup* world_if_started();

  int rank() const;
  int size() const;
  // "Open MPI v4.1.4", for the device description.
  std::string library_version() const;

  // x = factor * (sum of x over every process), in place, queued on the worker thread: `data` must
  // not be touched until wait() returns. n counts floats (or doubles).
  void all_reduce_sum_async(float* data, int64_t n, double factor);
  void all_reduce_sum_async(double* data, int64_t n, double factor);
  // Waits for every queued reduction.
  void wait();

  // Blocking (each waits for the queue first).
  void all_reduce_sum(std::vector<double>& values);
  void broadcast(void* data, int64_t bytes, int root);
  void barrier();
  // Ends every process of the job at once (MPI_Abort): after an error on one rank, so that the others
  // do not wait forever in their next collective.
  [[noreturn]] void abort(int exit_code);

  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

 private:
  ProcessGroup();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ct
