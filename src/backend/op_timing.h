#pragma once
// Wall-clock time of each backend op, for finding what dominates a training step
// (train_throughput_bench --profile-ops 1). Off by default: a disabled scope costs one branch.
// Backend's public ops open the scope (backend.cpp), for every backend.
//
// The CPU backend's ops are synchronous (each returns when its OpenMP threads are done), so the main
// thread's wall clock from entry to return is the op's whole cost, including the threads it waits
// for; unlike perf's samples, it also covers oneDNN's JIT-compiled kernels. Only the outermost op is
// counted: newton_schulz's own gemms count as newton_schulz. gemm is keyed by its shape and
// transposes ("gemm bf16 [4096 x 8192 x 256] NT" = M x N x K), every other op by its name.
// Not thread-safe: ops are timed from the thread that calls the backend.
//
// An asynchronous backend (cuda) returns from an op once it is queued: set_synchronizer(wait) makes
// every outermost op wait for the device before its clock starts and before it stops, so the wall
// clock covers the op's device time (plus one launch and one wait, some microseconds). Only outside
// graph regions, where a wait is allowed: train_throughput_bench --profile-ops 1 --graphs false.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ct::op_timing {

void set_enabled(bool enabled);
bool enabled();
void reset();  // forget what was timed so far (e.g. after warm-up steps)
// The device wait of an asynchronous backend (above); an empty function: none (the default).
void set_synchronizer(std::function<void()> wait);

struct Row {
  std::string op;
  int64_t calls = 0;
  double seconds = 0.0;
};
std::vector<Row> rows();  // most time first

// Times the enclosing op when timing is on and no op encloses it.
class Scope {
 public:
  explicit Scope(const char* op) {
    if (enabled()) open(op);
  }
  // key_of() names the op; called only when timing is on (gemm builds its shape key there).
  template <typename KeyOf>
  Scope(const char*, KeyOf key_of) {
    if (enabled()) open(key_of());
  }
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void open(std::string key);
  bool nested_ = false;   // counted in the depth of open ops
  bool outermost_ = false;
  std::string key_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ct::op_timing
