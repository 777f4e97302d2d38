#pragma once
// The collective library under the process group (process_group.h), one per launcher:
//   mpirun    Open MPI (mpi_collectives.cpp): mpirun starts the processes and MPI connects them.
//   torchrun  Gloo (gloo_collectives.cpp): the processes meet through torchrun's store
//             (torchrun_store.h) and connect to each other over TCP, as PyTorch's own CPU backend does.
// Every call blocks; the process group makes them one at a time. A call that does not complete within
// this process's limit (stall.h) does not return: the process holds a roll call, says which process
// stopped responding, and ends the job (MPI_Abort; under Gloo it exits, and the others' connections
// close). The waits poll with pauses (stall.h), so a process waiting for a stopped one stays idle.
#include <cstdint>
#include <memory>
#include <string>

#include "backend/parallel/launch.h"

namespace ct {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "Open MPI v4.1.4", "Gloo 0.5.0 over TCP": for the device description.
  virtual std::string library_version() const = 0;
  // x = factor * (sum of x over every process), in place, with the same bits on every process: each
  // element is summed in one place, in one order, and the result copied to the others.
  virtual void reduce_sum(float* x, int64_t n, double factor) = 0;
  virtual void reduce_sum(double* x, int64_t n, double factor) = 0;
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Ends this process at once, and with it the job: after an error on one rank, so that the others
  // do not wait forever in their next collective.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// Whether this build has MPI (CMake found Debian's libopenmpi-dev).
bool mpi_in_build();

// The job's processes over MPI (MPI_COMM_WORLD; MPI initialised here, finalised with the object);
// env gives the limits of stall.h.
std::unique_ptr<Collectives> make_mpi_collectives(const LaunchEnvironment& env);
// The job's processes over Gloo, meeting in torchrun's store at env.master_addr:env.master_port
// within env.timeout_seconds; its roll calls are held in that store too.
std::unique_ptr<Collectives> make_gloo_collectives(const LaunchEnvironment& env);

}  // namespace ct
