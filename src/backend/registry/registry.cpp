#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "util/error.h"
#ifdef CLOCKTRAIN_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace ct {

std::vector<std::string> available_backends() {
#ifdef CLOCKTRAIN_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

std::unique_ptr<Backend> create_backend(const BackendOptions& options) {
  if (options.name == "cpu") return make_cpu_backend(options);
#ifdef CLOCKTRAIN_HAVE_CUDA
  if (options.name == "cuda") return make_cuda_backend(options);
#endif
  fail("backend '", options.name, "' is not built into this binary (available: cpu",
#ifdef CLOCKTRAIN_HAVE_CUDA
       ", cuda",
#endif
       ")");
}

}  // namespace ct
