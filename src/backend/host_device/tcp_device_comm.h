#pragma once
// The host-device backend's device collectives (host_device_backend.h): what NCCL is to the CUDA
// backend, over TCP on this machine's loopback. It is made the way the CUDA backend makes its NCCL
// communicator: rank 0 creates an id (here its listening port and a random key), the job's rendezvous
// hands it to every process (backend/parallel/rendezvous.h: MPI under mpirun, torchrun's store under
// torchrun), and each process connects with it. It has no other way to reach the others: the run's host
// collectives stay the process group's (process_group.h), as on a GPU.
//
// A star through rank 0: every other process sends its tensor to rank 0, which sums in rank order
// (x_0 + x_1 + ... + x_{n-1}, in f64 for f64 tensors, f32 otherwise), scales, and sends the result to
// each; so every process gets the same bits, on every run. A broadcast from rank r goes through rank 0.
// Speed is not its purpose: it lets the tests run the trainer's device path with several processes
// on a machine without GPUs.
//
// A peer that closes its connection or sends nothing within this process's stall limit (stall.h)
// is a ct::Error naming it; the run's error path then ends the job (process_group.h).
#include <string>
#include <vector>

#include "backend/parallel/launch.h"
#include "backend/parallel/stall.h"
#include "backend/parallel/tcp_socket.h"
#include "backend/tensor.h"

namespace ct {

class TcpDeviceComm {
 public:
  // Joins the job of `env` (env.world_size > 1; every process on this machine).
  explicit TcpDeviceComm(const LaunchEnvironment& env);

  // Each tensor (f32, f64 or bf16, in host memory) becomes factor * (its sum over every process).
  void all_reduce_sum(const std::vector<Tensor>& tensors, double factor);
  // tensors[i] from process roots[i] to every process.
  void broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots);
  // "TCP star through rank 0 (127.0.0.1:PORT)"
  std::string description() const;

 private:
  // Receives exactly `bytes` from process `peer`, or a ct::Error naming it and `op`.
  void receive_from(int peer, void* data, size_t bytes, const char* op);
  void send_to(int peer, const void* data, size_t bytes, const char* op);

  int rank_ = 0, size_ = 1, port_ = 0;
  StallLimit limit_;
  // rank 0: peers_[r] is process r's connection (peers_[0] unused); elsewhere peers_[0] is rank 0's
  std::vector<TcpSocket> peers_;
};

}  // namespace ct
