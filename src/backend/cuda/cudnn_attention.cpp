#include "backend/cuda/cudnn_attention.h"

#include "util/error.h"

namespace ct::cuda {

// cuDNN's bf16 attention takes head_dims in steps of 8, up to 256 on Hopper with cuDNN 9.9+; this path
// keeps to 128 (the model's sizes) until it has run on a GPU. The causal mask is asked for in its
// square form (query i sees keys 0..i), so queries and keys must be as many.
bool CudnnAttention::supports(DType dtype, const AttentionDims& d) {
  return built() && dtype == DType::bf16 && d.query_len == d.key_len && d.head_dim % 8 == 0 && d.head_dim > 0 &&
         d.head_dim <= 128 && d.kv_heads > 0 && d.heads % d.kv_heads == 0;
}

}  // namespace ct::cuda

#if CT_HAVE_CUDNN_FRONTEND

#include <dlfcn.h>

#include <cstring>
#include <exception>
#include <map>
#include <tuple>
#include <unordered_map>

#include <cudnn_frontend.h>

// The frontend's calls into cuDNN go through this handle (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING,
// set by cmake/CudnnFrontend.cmake): libcudnn.so.9 is a run-time choice, not a link dependency.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace ct::cuda {

namespace {

namespace fe = cudnn_frontend;

// Tensor ids of the graphs' variant packs.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDout, kDq, kDk, kDv };

// A graph is built for one shape and scale and kept: the key is everything the plan depends on.
using Key = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t, uint32_t>;

Key key_of(bool backward, const AttentionDims& d, double scale) {
  const float s = static_cast<float>(scale);
  uint32_t bits = 0;
  std::memcpy(&bits, &s, sizeof bits);
  return {backward, d.batch, d.query_len, d.heads, d.kv_heads, d.head_dim, bits};
}

void check_fe(const fe::error_t& status, const char* step, const AttentionDims& d, bool backward) {
  if (status.is_good()) return;
  fail("cuDNN attention ", backward ? "backward" : "forward", ": ", step, " failed for B ", d.batch, ", T ",
       d.query_len, ", H ", d.heads, ", Hkv ", d.kv_heads, ", D ", d.head_dim, ": ", status.err_msg,
       " (attention \"flash\" uses clocktrain's own kernels)");
}

// [B, T, heads, D] rows as cuDNN's [B, heads, T, D] dims and strides.
fe::graph::Tensor_attributes bthd(const char* name, int64_t uid, const AttentionDims& d, int64_t heads) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim({d.batch, heads, d.query_len, d.head_dim})
      .set_stride({d.query_len * heads * d.head_dim, d.head_dim, heads * d.head_dim, 1});
}

// lse [B, H, T] in f32, as cuDNN's [B, H, T, 1] stats.
void as_stats(fe::graph::Tensor_attributes& t, const AttentionDims& d) {
  t.set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({d.batch, d.heads, d.query_len, 1})
      .set_stride({d.heads * d.query_len, d.query_len, 1, 1});
}

// The frontend reports some failures (a library it cannot open, a malformed graph) by throwing
// std::runtime_error rather than through error_t: those become ct::Error like the rest.
template <typename Body>
void guarded(const Body& body) {
  try {
    body();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("cuDNN attention: ", e.what(), " (attention \"flash\" uses clocktrain's own kernels)");
  }
}

using GraphPtr = std::shared_ptr<fe::graph::Graph>;

// sm_version 0: the frontend asks the current device; another value stands for a GPU of that
// compute capability (set before any node is added: each node copies the graph's settings).
GraphPtr new_graph(int sm_version) {
  auto graph = std::make_shared<fe::graph::Graph>();
  if (sm_version > 0) graph->set_sm_version(sm_version);
  graph->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

struct Operands {
  TensorPtr q, k, v;
};

Operands add_operands(fe::graph::Graph& graph, const AttentionDims& d) {
  return {graph.tensor(bthd("q", kQ, d, d.heads)), graph.tensor(bthd("k", kK, d, d.kv_heads)),
          graph.tensor(bthd("v", kV, d, d.kv_heads))};
}

// Marks a tensor the graph computes as an output with `layout`'s uid, dims and strides.
void as_output(fe::graph::Tensor_attributes& t, const fe::graph::Tensor_attributes& layout) {
  t.set_output(true).set_uid(layout.get_uid()).set_dim(layout.get_dim()).set_stride(layout.get_stride());
}

// out, lse = causal softmax(scale q k^T) v, and its log-sum-exp.
GraphPtr forward_graph(const AttentionDims& d, double scale, int sm_version) {
  auto graph = new_graph(sm_version);
  const Operands in = add_operands(*graph, d);
  auto options = fe::graph::SDPA_attributes()
                     .set_name("attention_forward")
                     .set_generate_stats(true)
                     .set_causal_mask(true)
                     .set_attn_scale(static_cast<float>(scale));
  auto [o, stats] = graph->sdpa(in.q, in.k, in.v, options);
  as_output(*o, bthd("out", kO, d, d.heads));
  stats->set_output(true);
  as_stats(*stats, d);
  return graph;
}

// dq, dk, dv from dout, the forward's out and lse; cuDNN's deterministic algorithm.
GraphPtr backward_graph(const AttentionDims& d, double scale, int sm_version) {
  auto graph = new_graph(sm_version);
  const Operands in = add_operands(*graph, d);
  auto o = graph->tensor(bthd("out", kO, d, d.heads));
  auto dout = graph->tensor(bthd("dout", kDout, d, d.heads));
  fe::graph::Tensor_attributes stats_layout;
  stats_layout.set_name("lse");
  as_stats(stats_layout, d);
  auto stats = graph->tensor(stats_layout);
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("attention_backward")
                     .set_causal_mask(true)
                     .set_attn_scale(static_cast<float>(scale))
                     .set_deterministic_algorithm(true);
  auto [dq, dk, dv] = graph->sdpa_backward(in.q, in.k, in.v, o, dout, stats, options);
  as_output(*dq, bthd("dq", kDq, d, d.heads));
  as_output(*dk, bthd("dk", kDk, d, d.kv_heads));
  as_output(*dv, bthd("dv", kDv, d, d.kv_heads));
  return graph;
}

// libcudnn.so.9, once per process: the frontend's every call into cuDNN goes through this handle.
void open_cudnn() {
  if (fe::cudnn_dlhandle) return;
  fe::cudnn_dlhandle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (!fe::cudnn_dlhandle) {
    const char* why = dlerror();
    fail("attention \"cudnn\": cannot open libcudnn.so.9 (", why ? why : "no reason given",
         "); install cuDNN 9 or put its lib folder on LD_LIBRARY_PATH");
  }
}

}  // namespace

struct CudnnAttention::Impl {
  cudnnHandle_t handle = nullptr;
  struct Plan {
    GraphPtr graph;
    int64_t workspace_bytes = 0;
  };
  std::map<Key, Plan> plans;

  // validate, lower to cuDNN's operation graph, ask the heuristics, keep the engines that support
  // it, build them; the first supported plan runs.
  Plan finish(GraphPtr graph, const AttentionDims& d, bool backward) {
    check_fe(graph->validate(), "validate", d, backward);
    check_fe(graph->build_operation_graph(handle), "build_operation_graph", d, backward);
    check_fe(graph->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans", d, backward);
    check_fe(graph->check_support(handle), "check_support", d, backward);
    check_fe(graph->build_plans(handle), "build_plans", d, backward);
    Plan plan{graph, 0};
    check_fe(graph->get_workspace_size(plan.workspace_bytes), "get_workspace_size", d, backward);
    return plan;
  }

  const Plan& plan(bool backward, const AttentionDims& d, double scale) {
    const Key key = key_of(backward, d, scale);
    auto found = plans.find(key);
    if (found != plans.end()) return found->second;
    GraphPtr graph = backward ? backward_graph(d, scale, 0) : forward_graph(d, scale, 0);
    return plans.emplace(key, finish(graph, d, backward)).first->second;
  }

  void execute(const Plan& plan, std::unordered_map<int64_t, void*>& pointers, const Workspace& workspace,
               const AttentionDims& d, bool backward) {
    void* space = plan.workspace_bytes > 0 ? workspace(static_cast<size_t>(plan.workspace_bytes)) : nullptr;
    check_fe(plan.graph->execute(handle, pointers, space), "execute", d, backward);
  }
};

bool CudnnAttention::built() { return true; }

void CudnnAttention::check_graphs(const AttentionDims& dims, double scale, int sm_version) {
  open_cudnn();
  for (bool backward : {false, true}) {
    guarded([&] {
      GraphPtr graph = backward ? backward_graph(dims, scale, sm_version) : forward_graph(dims, scale, sm_version);
      check_fe(graph->validate(), "validate", dims, backward);
    });
  }
}

CudnnAttention::CudnnAttention(cudaStream_t stream) : impl_(std::make_unique<Impl>()) {
  open_cudnn();
  guarded([&] {
    const cudnnStatus_t created = fe::detail::create_handle(&impl_->handle);
    check(created == CUDNN_STATUS_SUCCESS, "attention \"cudnn\": cudnnCreate failed: ",
          fe::detail::get_error_string(created));
    const cudnnStatus_t bound = fe::detail::set_stream(impl_->handle, stream);
    check(bound == CUDNN_STATUS_SUCCESS, "attention \"cudnn\": cudnnSetStream failed: ",
          fe::detail::get_error_string(bound));
  });
}

CudnnAttention::~CudnnAttention() {
  if (impl_ && impl_->handle) fe::detail::destroy_handle(impl_->handle);
}

std::string CudnnAttention::version() const {
  const size_t v = fe::detail::get_backend_version();
  return str("cuDNN ", v / 10000, ".", (v / 100) % 100, ".", v % 100, " (frontend ", CUDNN_FRONTEND_MAJOR_VERSION, ".",
             CUDNN_FRONTEND_MINOR_VERSION, ".", CUDNN_FRONTEND_PATCH_VERSION, ")");
}

void CudnnAttention::forward(void* out, float* lse, const void* q, const void* k, const void* v,
                             const AttentionDims& dims, double scale, const Workspace& workspace) {
  guarded([&] {
    const Impl::Plan& plan = impl_->plan(false, dims, scale);
    std::unordered_map<int64_t, void*> pointers = {
        {kQ, const_cast<void*>(q)}, {kK, const_cast<void*>(k)}, {kV, const_cast<void*>(v)}, {kO, out}, {kStats, lse}};
    impl_->execute(plan, pointers, workspace, dims, false);
  });
}

void CudnnAttention::backward(void* dq, void* dk, void* dv, const void* dout, const void* out, const float* lse,
                              const void* q, const void* k, const void* v, const AttentionDims& dims, double scale,
                              const Workspace& workspace) {
  guarded([&] {
    const Impl::Plan& plan = impl_->plan(true, dims, scale);
    std::unordered_map<int64_t, void*> pointers = {
        {kQ, const_cast<void*>(q)},   {kK, const_cast<void*>(k)},       {kV, const_cast<void*>(v)},
        {kO, const_cast<void*>(out)}, {kDout, const_cast<void*>(dout)}, {kStats, const_cast<float*>(lse)},
        {kDq, dq},                    {kDk, dk},                        {kDv, dv}};
    impl_->execute(plan, pointers, workspace, dims, true);
  });
}

}  // namespace ct::cuda

#else  // built without the cuDNN frontend headers

namespace ct::cuda {

namespace {
[[noreturn]] void not_built() {
  fail("attention \"cudnn\": this build has no cuDNN attention (the cuDNN frontend headers were not "
       "found when configuring; run scripts/install-cudnn-frontend.sh, then configure again: docs/cuda.md)");
}
}  // namespace

struct CudnnAttention::Impl {};

bool CudnnAttention::built() { return false; }
void CudnnAttention::check_graphs(const AttentionDims&, double, int) { not_built(); }
CudnnAttention::CudnnAttention(cudaStream_t) { not_built(); }
CudnnAttention::~CudnnAttention() = default;
std::string CudnnAttention::version() const { return "not built"; }
void CudnnAttention::forward(void*, float*, const void*, const void*, const void*, const AttentionDims&, double,
                             const Workspace&) {
  not_built();
}
void CudnnAttention::backward(void*, void*, void*, const void*, const void*, const float*, const void*, const void*,
                              const void*, const AttentionDims&, double, const Workspace&) {
  not_built();
}

}  // namespace ct::cuda

#endif
