#include "backend/cuda/nccl_comm.h"

#include <dlfcn.h>

#include "backend/parallel/rendezvous.h"
#include "util/error.h"

namespace ct::cuda {

// The subset of nccl.h this file uses (values from NCCL's public header, stable across 2.x).
namespace nccl {
using Result = int;  // ncclResult_t; 0 = ncclSuccess
using Comm = void*;  // ncclComm_t
constexpr int kUniqueIdBytes = 128;
struct UniqueId {
  char internal[kUniqueIdBytes];
};
enum DataType : int { kInt32 = 2, kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9 };
enum RedOp : int { kSum = 0 };
}  // namespace nccl

struct NcclComm::Api {
  nccl::Result (*get_unique_id)(nccl::UniqueId*) = nullptr;
  nccl::Result (*comm_init_rank)(nccl::Comm*, int, nccl::UniqueId, int) = nullptr;
  nccl::Result (*comm_destroy)(nccl::Comm) = nullptr;
  nccl::Result (*all_reduce)(const void*, void*, size_t, int, int, nccl::Comm, cudaStream_t) = nullptr;
  nccl::Result (*broadcast)(const void*, void*, size_t, int, int, nccl::Comm, cudaStream_t) = nullptr;
  nccl::Result (*group_start)() = nullptr;
  nccl::Result (*group_end)() = nullptr;
  nccl::Result (*get_version)(int*) = nullptr;
  const char* (*error_string)(nccl::Result) = nullptr;
};

namespace {

template <typename Fn>
void bind(void* library, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  check(fn != nullptr, "NCCL: ", name, " not found in libnccl.so.2");
}

int nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return nccl::kFloat32;
    case DType::bf16: return nccl::kBfloat16;
    case DType::f64: return nccl::kFloat64;
    case DType::i32: return nccl::kInt32;
  }
  return nccl::kFloat32;
}

}  // namespace

#define CT_NCCL_CHECK(call)                                                                           \
  do {                                                                                                \
    nccl::Result ct_nccl_status_ = (call);                                                            \
    if (ct_nccl_status_ != 0)                                                                         \
      fail("NCCL error ", ct_nccl_status_, " (", api_->error_string ? api_->error_string(ct_nccl_status_) : "?", \
           ") in ", #call);                                                                           \
  } while (0)

NcclComm::NcclComm(const LaunchEnvironment& env) : api_(new Api), world_size_(env.world_size) {
  library_ = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  check(library_ != nullptr, "NCCL: cannot load libnccl.so.2 (", dlerror(),
        "); a job of several processes needs NCCL on the library path");
  bind(library_, "ncclGetUniqueId", api_->get_unique_id);
  bind(library_, "ncclCommInitRank", api_->comm_init_rank);
  bind(library_, "ncclCommDestroy", api_->comm_destroy);
  bind(library_, "ncclAllReduce", api_->all_reduce);
  bind(library_, "ncclBroadcast", api_->broadcast);
  bind(library_, "ncclGroupStart", api_->group_start);
  bind(library_, "ncclGroupEnd", api_->group_end);
  bind(library_, "ncclGetVersion", api_->get_version);
  bind(library_, "ncclGetErrorString", api_->error_string);
  nccl::UniqueId id{};
  if (env.rank == 0) CT_NCCL_CHECK(api_->get_unique_id(&id));
  std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(id.internal), reinterpret_cast<uint8_t*>(id.internal) + sizeof(id));
  bytes = exchange_id(env, bytes);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<uint8_t*>(id.internal));
  CT_NCCL_CHECK(api_->comm_init_rank(&comm_, env.world_size, id, env.rank));
}

NcclComm::~NcclComm() {
  if (comm_ && api_->comm_destroy) api_->comm_destroy(comm_);
  if (library_) dlclose(library_);
  delete api_;
}

void NcclComm::all_reduce_sum(const std::vector<Tensor>& tensors, cudaStream_t stream) {
  CT_NCCL_CHECK(api_->group_start());
  for (const Tensor& t : tensors)
    CT_NCCL_CHECK(api_->all_reduce(t.data, t.data, static_cast<size_t>(t.numel()), nccl_type(t.dtype), nccl::kSum,
                                   comm_, stream));
  CT_NCCL_CHECK(api_->group_end());
}

void NcclComm::broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots, cudaStream_t stream) {
  CT_NCCL_CHECK(api_->group_start());
  for (size_t i = 0; i < tensors.size(); ++i)
    CT_NCCL_CHECK(api_->broadcast(tensors[i].data, tensors[i].data, static_cast<size_t>(tensors[i].numel()),
                                  nccl_type(tensors[i].dtype), roots[i], comm_, stream));
  CT_NCCL_CHECK(api_->group_end());
}

std::string NcclComm::version() const {
  int code = 0;
  if (api_->get_version) api_->get_version(&code);
  return str(code / 10000, ".", (code / 100) % 100, ".", code % 100);
}

}  // namespace ct::cuda
