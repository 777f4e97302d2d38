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
  void do_upload(const Tensor&, const void*, DType) override { kernel(); }
  void do_download(void*, DType, const Tensor&) override { kernel(); }
  void do_fill(const Tensor&, double) override { kernel(); }
  void do_copy(const Tensor&, const Tensor&) override { kernel(); }
  void do_axpby(const Tensor&, double, const Tensor&, double) override { kernel(); }
  void do_scale(const Tensor&, double) override { kernel(); }
  double do_sum(const Tensor&) override { return kernel(), 0.0; }
  double do_sum_squares(const Tensor&) override { return kernel(), 0.0; }
  void do_gemm(const Tensor&, const Tensor&, const Tensor&, bool, bool, double, double) override { kernel(); }
  void do_embedding_forward(const Tensor&, const Tensor&, const Tensor&) override { kernel(); }
  void do_embedding_backward(const Tensor&, const Tensor&, const Tensor&) override { kernel(); }
  void do_rmsnorm_forward(const Tensor&, const Tensor&, const Tensor&, double) override { kernel(); }
  void do_rmsnorm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&) override { kernel(); }
  void do_rope_qknorm_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t,
                              double) override {
    kernel();
  }
  void do_rope_qknorm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                               const Tensor&, int64_t) override {
    kernel();
  }
  void do_attention_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                            double) override {
    kernel();
  }
  void do_attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&, const Tensor&, const Tensor&, const Tensor&, double) override {
    kernel();
  }
  void do_relu2_forward(const Tensor&, const Tensor&) override { kernel(); }
  void do_relu2_backward(const Tensor&, const Tensor&, const Tensor&) override { kernel(); }
  void do_softcap_cross_entropy_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                        double) override {
    kernel();
  }
  void do_softcap_cross_entropy_backward(const Tensor&, const Tensor&, const Tensor&, double, double) override {
    kernel();
  }
  void do_adamw_update(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, double, double, double,
                       double, int64_t) override {
    kernel();
  }
  void do_muon_momentum(const Tensor&, const Tensor&, const Tensor&, double) override { kernel(); }
  void do_newton_schulz(const Tensor&, const Tensor&, int, double, double, double) override { kernel(); }
};

}  // namespace ct::test
