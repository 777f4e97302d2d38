#pragma once
// The host-device backend ("host-device", docs/parallel.md): the CPU backend's kernels and memory
// behind the device interface, with device collectives of its own (tcp_device_comm.h) and no host
// collectives, as the CUDA backend has NCCL and no host collectives. It exists so that the trainer's
// device path (the run's process group for the host collectives, the backend's all-reduce and
// broadcast for the gradients and parameters) runs with several processes on a machine without GPUs:
// tests/parallel/host_device_test.cpp trains 2 and 3 of them under mpirun and torchrun against one.
// It trains what the CPU backend trains, at the CPU backend's speed less the star's copies; a user
// has no reason to pick it over "cpu".
#include <memory>

#include "backend/backend.h"

namespace ct {

std::unique_ptr<Backend> make_host_device_backend(const BackendOptions& options);

}  // namespace ct
