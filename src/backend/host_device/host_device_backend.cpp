#include "backend/host_device/host_device_backend.h"

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/host_device/tcp_device_comm.h"
#include "backend/parallel/launch.h"

namespace ct {

namespace {

// One process per "device": the launcher's environment gives the rank and the world (as for a GPU),
// and the communicator is made from it, never from the process group.
class HostDeviceBackend final : public CpuBackend {
 public:
  explicit HostDeviceBackend(const BackendOptions& options)
      : CpuBackend(for_the_cpu(options)),
        launch_(options.data_parallel ? launch_environment_from_process() : LaunchEnvironment()) {
    if (launch_.distributed()) comm_ = std::make_unique<TcpDeviceComm>(launch_);
  }

  std::string name() const override { return "host-device"; }
  std::string device_description() const override {
    std::string description = "host memory behind the device interface: " + CpuBackend::device_description();
    if (comm_) description += str("; rank ", rank(), " of ", world_size(), " (", comm_->description(), ")");
    return description;
  }

  int world_size() const override { return launch_.world_size; }
  int rank() const override { return launch_.rank; }
  void all_reduce_begin(const std::vector<Tensor>& tensors, double factor) override {
    if (!comm_) {
      Backend::all_reduce_begin(tensors, factor);  // one process: the scale alone
      return;
    }
    comm_->all_reduce_sum(tensors, factor);  // done at once: all_reduce_end has nothing to wait for
  }
  void all_reduce_end() override {}
  void broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots) override {
    if (!comm_) {
      Backend::broadcast(tensors, roots);
      return;
    }
    comm_->broadcast(tensors, roots);
  }

 private:
  // The CPU backend of one process: it must not join the launcher's job through the process group.
  static BackendOptions for_the_cpu(BackendOptions options) {
    options.data_parallel = false;
    return options;
  }

  LaunchEnvironment launch_;
  std::unique_ptr<TcpDeviceComm> comm_;
};

}  // namespace

std::unique_ptr<Backend> make_host_device_backend(const BackendOptions& options) {
  return std::make_unique<HostDeviceBackend>(options);
}

}  // namespace ct
