#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/host_device/host_device_backend.h"
#include "backend/parallel/launch.h"
#include "util/error.h"
#ifdef CLOCKTRAIN_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace ct {

std::vector<std::string> available_backends() {
#ifdef CLOCKTRAIN_HAVE_CUDA
  return {"cpu", "cuda", "host-device"};
#else
  return {"cpu", "host-device"};
#endif
}

namespace {

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
  if (options.name == "cpu") return make_cpu_backend(options);
  if (options.name == "host-device") return make_host_device_backend(options);
#ifdef CLOCKTRAIN_HAVE_CUDA
  if (options.name == "cuda") return make_cuda_backend(options);
#endif
  std::string available;
  for (const std::string& name : available_backends()) available += (available.empty() ? "" : ", ") + name;
  fail("backend '", options.name, "' is not built into this binary (available: ", available, ")");
}

}  // namespace

std::unique_ptr<Backend> create_backend(const BackendOptions& options) {
  std::unique_ptr<Backend> backend = make_backend(options);
  if (options.data_parallel) check_serves_the_job(*backend, launch_environment_from_process());
  return backend;
}

void check_serves_the_job(const Backend& backend, const LaunchEnvironment& env) {
  check(backend.world_size() == env.world_size && backend.rank() == env.rank, "backend '", backend.name(),
        "' is process ", backend.rank(), " of ", backend.world_size(), " where the launcher (", env.launcher,
        ") started process ", env.rank, " of ", env.world_size, ": it does not train data-parallel; launch one "
        "process (docs/parallel.md)");
}

}  // namespace ct
