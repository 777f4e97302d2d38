// A model checkpoint folder as the evaluators load it: load_model(backend, dir) reads config.json,
// builds the model and loads model.safetensors. Input: config.json, a NUL byte, model.safetensors.
// A config that claims a model larger than the weights file can hold must be refused before the
// model is allocated.
#include "backend/cpu/cpu_backend.h"
#include "fuzz_support.h"
#include "model/checkpoint.h"

namespace {
ct::Backend& fuzz_backend() {
  static const std::unique_ptr<ct::Backend> backend = [] {
    ct::BackendOptions options;
    options.name = "cpu";
    options.threads = 1;
    return ct::make_cpu_backend(options);
  }();
  return *backend;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto files = ct::fuzz::split_at_nul(ct::fuzz::as_text(data, size));
  const auto& dir = ct::fuzz::scratch().path();
  ct::fuzz::scratch().write(ct::kModelConfigFile, files.first);
  ct::fuzz::scratch().write(ct::kModelWeightsFile, files.second);
  ct::fuzz::accept_only_ct_errors([&] {
    const auto model = ct::load_model(fuzz_backend(), dir);
    ct::fuzz::fuzz_require(model != nullptr, "a loaded model");
  });
  return 0;
}
