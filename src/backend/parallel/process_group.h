#pragma once
// The processes of one data-parallel job on the host, one layer beside the backend: the run's host
// collectives on every backend (the trainer's losses, the step's agreed clock, the stop signal, the
// fingerprints; ProcessGroup::of_this_job), the CPU backend's gradient all-reduce and broadcast, and
// how NCCL's unique id reaches every GPU process under mpirun. A device backend adds only its device
// collectives (Backend::all_reduce_begin and broadcast: NCCL on the GPU). Over the launcher's library (collectives.h):
// Open MPI under `mpirun -np N`, Gloo under `torchrun --nproc_per_node N`.
//
// Why these two (docs/parallel.md): mpirun already starts the processes on one machine or many
// (`--host`), gives each its rank, carries the collectives over shared memory or TCP, and stops the
// whole job when one process dies; torchrun's processes cannot form an MPI job, and meet instead in
// torchrun's own store, which Gloo can use (as PyTorch's CPU backend does).
//
// Every reduction gives the same bits on every process and on every run (collectives.h).
//
// A collective that does not complete within this process's limit (stall.h: CLOCKTRAIN_COLLECTIVE_TIMEOUT
// on rank 0, CLOCKTRAIN_RANK0_TIMEOUT elsewhere) ends the job, naming the process that stopped
// responding; until then the waiting process sleeps between polls.
//
// Threads: the gradient all-reduce runs on a worker thread of its own (all_reduce_sum_async), so
// that it overlaps the rest of the backward pass; every blocking call first waits for it, so only one
// thread is inside the library at any time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ct {

class ProcessGroup {
 public:
  // The job's processes, connected on the first call by the launcher's library (mpirun: MPI,
  // torchrun: Gloo); an error for other launchers, or when the build lacks the library. Ended at exit.
  static ProcessGroup& world();
  // world() when it was made already, else null (no library call): for the error path, which must
  // not connect the processes only to stop them.
  static ProcessGroup* world_if_started();
  // world() when the launcher's environment says this process is one of several, null when it is
  // alone: what a run holds for its host collectives, whatever its backend.
  static ProcessGroup* of_this_job();

  int rank() const;
  int size() const;
  // "Open MPI v4.1.4", "Gloo 0.5.0 over TCP": for the device description.
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
  // This process's last word in the job, once no collective is left: waits for the queue, then closes
  // the library (MPI_Finalize, which returns once every process has called it; Gloo's connections).
  // Afterwards rank(), size() and library_version() still answer and a collective is an error. For
  // the end of training, so that the other processes leave while rank 0 evaluates instead of waiting
  // in MPI_Finalize (which polls) until it exits. Again: nothing.
  void finish();
  // Ends the job (MPI_Abort; under Gloo this process exits and the others' collectives fail on its
  // closed connections): after an error on one rank, so that the others do not wait forever.
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
