#include "model/checkpoint.h"

#include <set>
#include <vector>

#include "model/safetensors.h"
#include "util/error.h"
#include "util/files.h"
#include "util/folder_checksums.h"
#include "util/json.h"

namespace ct {

namespace {
std::vector<int64_t> dims_of(const Shape& shape) {
  std::vector<int64_t> dims;
  for (int i = 0; i < shape.ndim; ++i) dims.push_back(shape[i]);
  return dims;
}
}  // namespace

void save_model(GPT& model, const std::filesystem::path& dir, const std::map<std::string, std::string>& metadata) {
  ensure_directory(dir);
  // const access: saving leaves the weights' compute copies current (gpt.h)
  const std::vector<Parameter>& params = static_cast<const GPT&>(model).parameters();
  std::vector<std::vector<float>> host(params.size());
  SafetensorsWriter writer;
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    host[i].resize(static_cast<size_t>(p.spec.shape.numel()));
    model.backend().download(host[i].data(), DType::f32, p.value);
    writer.add(p.spec.name, "F32", dims_of(p.spec.shape), host[i].data());
  }
  // "format": "pt" is what Hugging Face's loaders (transformers, safetensors' torch helpers) require of a
  // PyTorch state dict, which this is (nanochat's names, [out, in]); clocktrain's own format string has
  // its own key. Readers do not need either (files written before this carry "format":
  // "clocktrain-model/1" and load the same).
  writer.set_metadata("format", "pt");
  writer.set_metadata("clocktrain_format", "clocktrain-model/1");
  for (const auto& [k, v] : metadata) writer.set_metadata(k, v);
  writer.write(dir / kModelWeightsFile);
  write_file_atomic(dir / kModelConfigFile, to_json(model.config()).dump(2) + "\n");
}

ModelConfig load_model_config(const std::filesystem::path& dir) {
  const auto path = dir / kModelConfigFile;
  verify_file_checksum(path);
  return model_config_from_json(read_json_file(path), path.string());
}

std::string load_model_weights(GPT& model, const std::filesystem::path& safetensors_path) {
  std::string sha256 = verify_file_checksum(safetensors_path);
  SafetensorsFile file(safetensors_path);
  std::set<std::string> expected;
  for (const Parameter& p : model.parameters()) expected.insert(p.spec.name);
  for (const SafetensorsEntry& e : file.entries())
    check(expected.count(e.name) == 1, safetensors_path.string(), ": unexpected tensor '", e.name,
          "' (not a parameter of this model's config)");
  // Validate every entry before reading any data.
  for (const Parameter& p : model.parameters()) file.expect(p.spec.name, "F32", dims_of(p.spec.shape));
  std::vector<float> host;
  for (Parameter& p : model.parameters()) {
    const SafetensorsEntry& e = *file.find(p.spec.name);
    host.resize(static_cast<size_t>(e.numel()));
    file.read_finite_f32(e, host.data());
    model.backend().upload(p.value, host.data(), DType::f32);
  }
  model.weights_changed();
  return sha256;
}

std::unique_ptr<GPT> load_model(Backend& backend, const std::filesystem::path& dir, DType dtype,
                                std::string* weights_sha256) {
  const ModelConfig config = load_model_config(dir);
  // The weights file holds every parameter as F32: a config.json that describes a larger model than
  // the file can hold is refused before the model (twice its parameters, with gradients) is allocated.
  const auto weights_path = dir / kModelWeightsFile;
  std::error_code ec;
  const uint64_t weights_bytes = std::filesystem::file_size(weights_path, ec);
  check(!ec, weights_path.string(), ": cannot read: ", ec.message());
  // A file of another dtype (bf16 from another trainer) is told so, rather than that it is too small.
  const SafetensorsFile weights(weights_path);
  for (const SafetensorsEntry& e : weights.entries()) weights.require_dtype(e, "F32");
  const uint64_t needed_bytes = static_cast<uint64_t>(config.parameter_count()) * sizeof(float);
  check(weights_bytes >= needed_bytes, weights_path.string(), ": ", weights_bytes, " bytes cannot hold the ",
        config.parameter_count(), " F32 parameters (", needed_bytes, " bytes) that ", (dir / kModelConfigFile).string(),
        " describes");
  auto model = std::make_unique<GPT>(backend, config, dtype);
  const std::string sha256 = load_model_weights(*model, weights_path);
  if (weights_sha256) *weights_sha256 = sha256;
  return model;
}

}  // namespace ct
