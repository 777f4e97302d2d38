#pragma once
// ProbeBackend: a backend with host memory and no kernels (each op only counts a call), for tests of
// what the base class and the layers above do before any kernel: the op contract's checks
// (op_contract_test.cpp) and how TrainStep drives graph regions (train_step_test.cpp: with
// `graphs` on it says it supports regions and lists every reset_graph it is asked for).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ct::test {

// Whatever it refuses, the base class refused, before any kernel.
class ProbeBackend final : public Backend {
 public:
  std::string name() const override { return "probe"; }
  std::string device_description() const override { return "kernels never reached"; }
  Tensor allocate(const Shape& shape, DType dtype) override {
    Tensor t;
    t.shape = shape;
    t.dtype = dtype;
    t.data = std::aligned_alloc(64, (std::max<size_t>(t.bytes(), 1) + 63) / 64 * 64);
    std::memset(t.data, 0, std::max<size_t>(t.bytes(), 1));
    return t;
  }
  void release(Tensor& tensor) override {
    std::free(tensor.data);
    tensor = {};
  }
  int kernel_calls = 0;
  int world = 1;  // world_size(): a backend that claims several processes without collectives of its own
  int world_size() const override { return world; }
  bool graphs = false;
  std::vector<std::string> graph_resets;
  bool supports_graphs() const override { return graphs; }
  void reset_graph(const std::string& name) override { graph_resets.push_back(name); }

 protected:
  void kernel() { ++kernel_calls; }
  // Every required kernel of ops.def: counts the call (and returns 0 where it returns a value).
#define CT_OP(Ret, name, params, args, main, kernel, body) CT_PROBE_KERNEL_##kernel(Ret, do_##name, params)
#define CT_PROBE_KERNEL_required(Ret, function, params) \
  Ret function params override {                        \
    kernel();                                           \
    return Ret();                                       \
  }
#define CT_PROBE_KERNEL_optional(Ret, function, params)
#include "backend/ops.def"
#undef CT_OP
#undef CT_PROBE_KERNEL_required
#undef CT_PROBE_KERNEL_optional
};

}  // namespace ct::test
