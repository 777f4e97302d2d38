// A stand-in for the driver's libnvidia-ml.so.1 with the three calls util/machine_gpus.cpp makes: it
// reports the GPU count in FAKE_NVML_GPUS (nvmlInit_v2 fails, returning 1, when that is unset).
#include <cstdlib>

extern "C" {
int nvmlInit_v2() { return std::getenv("FAKE_NVML_GPUS") ? 0 : 1; }
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = static_cast<unsigned int>(std::atoi(std::getenv("FAKE_NVML_GPUS")));
  return 0;
}
int nvmlShutdown() { return 0; }
}
