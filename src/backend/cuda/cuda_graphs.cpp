// Graph regions (backend.h): CUDA stream capture driven by GraphRecorder's bookkeeping.
//
// Recording: begin_graph starts a capture of the backend's stream (relaxed mode, so that scratch
// buffers may still grow) whose first node copies the region's scalar table (pinned host memory)
// to the device; every op then launches as usual, reading its scalar arguments from that table,
// and uploads copy from pinned buffers of their own. end_graph ends the capture, instantiates the
// graph and launches it.
// Replaying: every op only writes its scalars into the table (and uploads into their buffers);
// end_graph launches the instantiated graph. Before a replay refills the table, begin_graph waits
// for the previous launch of that region (an event), so a launch never reads half-written scalars.
#include <cstring>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"

namespace ct::cuda {

void CudaBackend::check_no_region(const char* op) {
  if (!recorder_.active()) return;
  const std::string region = recorder_.open_region();
  abandon_region();
  fail(op, ": not allowed inside graph region '", region,
       "' (host values come out through the value slots, after end_graph; memory is allocated before begin_graph)");
}

void CudaBackend::op_failed() noexcept {
  if (recorder_.active()) abandon_region();
}

void CudaBackend::begin_graph(const std::string& name) {
  const GraphRecorder::Mode mode = recorder_.begin(name);
  try {
    if (mode == GraphRecorder::Mode::recording) {
      destroy_region_state(name);  // what an unfinished earlier recording left
      auto fresh = std::make_unique<RegionState>();
      RegionState& s = *fresh;
      region_states_[name] = std::move(fresh);
      const size_t bytes = sizeof(double) * GraphRecorder::kScalarsPerRegion;
      CT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s.scalars_device), bytes));
      CT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&s.scalars_host), bytes, cudaHostAllocDefault));
      std::memset(s.scalars_host, 0, bytes);
      CT_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
      CT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
      capturing_ = true;
      CT_CUDA_CHECK(cudaMemcpyAsync(s.scalars_device, s.scalars_host, bytes, cudaMemcpyHostToDevice, stream_));
    } else {
      auto found = region_states_.find(name);
      check(found != region_states_.end() && found->second, "begin_graph('", name, "'): the recording has no CUDA state");
      if (found->second->launched) CT_CUDA_CHECK(cudaEventSynchronize(found->second->done));
    }
  } catch (...) {
    abandon_region();
    throw;
  }
}

void CudaBackend::end_graph() {
  check(recorder_.active(), "end_graph: no region is open");
  const std::string name = recorder_.open_region();
  const bool recording = recorder_.mode() == GraphRecorder::Mode::recording;
  try {
    recorder_.end();  // a replay that made other calls than the recording fails here
  } catch (...) {
    abandon_region();
    throw;
  }
  RegionState& state = *region_states_.at(name);
  if (recording) {
    cudaGraph_t graph = nullptr;
    capturing_ = false;
    const cudaError_t status = cudaStreamEndCapture(stream_, &graph);
    if (status != cudaSuccess || graph == nullptr) {
      recorder_.reset(name);
      destroy_region_state(name);
      fail("end_graph('", name, "'): the capture failed: ", cudaGetErrorString(status));
    }
    const cudaError_t instantiated = cudaGraphInstantiate(&state.exec, graph, 0);
    cudaGraphDestroy(graph);
    if (instantiated != cudaSuccess) {
      recorder_.reset(name);
      destroy_region_state(name);
      fail("end_graph('", name, "'): cannot instantiate the graph: ", cudaGetErrorString(instantiated));
    }
  }
  CT_CUDA_CHECK(cudaGraphLaunch(state.exec, stream_));
  CT_CUDA_CHECK(cudaEventRecord(state.done, stream_));
  state.launched = true;
}

void CudaBackend::reset_graph(const std::string& name) {
  check(!(recorder_.active() && recorder_.open_region() == name), "reset_graph('", name, "'): the region is open");
  recorder_.reset(name);
  destroy_region_state(name);
}

void CudaBackend::destroy_region_state(const std::string& name) {
  auto found = region_states_.find(name);
  if (found == region_states_.end()) return;
  if (found->second) {
    RegionState& s = *found->second;
    if (s.launched) cudaEventSynchronize(s.done);
    if (s.exec) cudaGraphExecDestroy(s.exec);
    if (s.scalars_device) cudaFree(s.scalars_device);
    if (s.scalars_host) cudaFreeHost(s.scalars_host);
    for (void* p : s.staging) cudaFreeHost(p);
    if (s.done) cudaEventDestroy(s.done);
  }
  region_states_.erase(found);
}

void CudaBackend::abandon_region() {
  if (!recorder_.active()) return;
  const std::string name = recorder_.open_region();
  const bool recording = recorder_.mode() == GraphRecorder::Mode::recording;
  if (capturing_) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    capturing_ = false;
  }
  recorder_.abandon();
  if (recording) destroy_region_state(name);
}

CudaBackend::OpCall CudaBackend::graph_call(const char* op, const Signature& signature,
                                            std::initializer_list<Tensor> tensors, std::initializer_list<double> scalars,
                                            size_t upload_bytes) {
  OpCall call;
  check(scalars.size() <= 8, op, ": more than 8 scalar arguments");
  if (!recorder_.active()) {
    int i = 0;
    for (double value : scalars) call.scalars[i++] = scalar(value);
    return call;
  }
  std::vector<const void*> bases;
  for (const Tensor& t : tensors) bases.push_back(allocation_of(t.data));
  const GraphRecorder::Slots slots =
      recorder_.on_call(op, signature.value(), static_cast<int>(scalars.size()), bases, upload_bytes);
  RegionState& state = *region_states_.at(recorder_.open_region());
  int i = 0;
  for (double value : scalars) {
    const int slot = slots.first_scalar + i;
    state.scalars_host[slot] = value;
    call.scalars[i++] = ScalarArg{value, state.scalars_device + slot};
  }
  if (upload_bytes > 0) {
    if (recorder_.mode() == GraphRecorder::Mode::recording) {
      void* staging = nullptr;
      CT_CUDA_CHECK(cudaHostAlloc(&staging, upload_bytes, cudaHostAllocDefault));
      state.staging.push_back(staging);
    }
    call.upload_staging = state.staging.at(static_cast<size_t>(slots.upload));
  }
  call.launch = slots.launch;
  return call;
}

}  // namespace ct::cuda
