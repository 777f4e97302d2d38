#pragma once
// A model checkpoint folder (docs/formats.md):
//   model.safetensors   fp32 weights, nanochat's names and shapes ([out, in]), __metadata__ with the
//                       format, step and anything the caller adds
//   config.json         the model's fields (model/config.h to_json)
//   tokenizer.tiktoken, tokenizer_clocktrain.json   the tokenizer, copied beside them by the trainer
//                       (text/tokenizer.h; older checkpoints hold tokenizer.json)
//   SHA256SUMS          every other file's SHA-256 (util/folder_checksums.h), written last
// (the trainer adds training_state.safetensors for resuming and writes SHA256SUMS:
// train/checkpoint.h). Every file is written atomically. Reading checks each file against
// SHA256SUMS where the folder has one, names, dtypes and shapes before allocating, and that every
// weight is finite.
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "model/config.h"
#include "model/gpt.h"

namespace ct {

inline constexpr const char* kModelWeightsFile = "model.safetensors";
inline constexpr const char* kModelConfigFile = "config.json";

// Writes model.safetensors (with `metadata` added to __metadata__) and config.json into `dir`; the
// caller that completes the folder writes SHA256SUMS (save_training_checkpoint does).
void save_model(GPT& model, const std::filesystem::path& dir, const std::map<std::string, std::string>& metadata = {});

// Reads dir/config.json, checked against dir/SHA256SUMS (errors name the file and field).
ModelConfig load_model_config(const std::filesystem::path& dir);

// Loads weights from a safetensors file into an existing model of the same shape: the file is checked
// against the SHA256SUMS beside it, every parameter must be present as F32 with its exact shape and
// finite values, and no other tensor may be there. Returns the file's SHA-256. After an error the
// model's weights are partly loaded: the caller must not use them.
std::string load_model_weights(GPT& model, const std::filesystem::path& safetensors_path);

// config.json + model.safetensors -> a model on `backend` (what evaluators call); `weights_sha256`,
// when given, gets model.safetensors' SHA-256.
std::unique_ptr<GPT> load_model(Backend& backend, const std::filesystem::path& dir, DType dtype = DType::f32,
                                std::string* weights_sha256 = nullptr);

}  // namespace ct
