#pragma once
// A model checkpoint folder (docs/formats.md):
//   model.safetensors   fp32 weights, nanochat's names and shapes ([out, in]), __metadata__ with the
//                       format, step and anything the caller adds
//   config.json         the model's fields (model/config.h to_json)
//   tokenizer.tiktoken, tokenizer.json   the tokenizer, copied beside them by the trainer
// (the trainer adds training_state.safetensors for resuming: train/checkpoint.h).
// Every file is written atomically; reading checks names, dtypes and shapes before allocating.
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

// Writes model.safetensors (with `metadata` added to __metadata__) and config.json into `dir`.
void save_model(GPT& model, const std::filesystem::path& dir, const std::map<std::string, std::string>& metadata = {});

// Reads dir/config.json (errors name the file and field).
ModelConfig load_model_config(const std::filesystem::path& dir);

// Loads weights from a safetensors file into an existing model of the same shape: every parameter
// must be present as F32 with its exact shape, and no other tensor may be there.
void load_model_weights(GPT& model, const std::filesystem::path& safetensors_path);

// config.json + model.safetensors -> a model on `backend` (what evaluators call).
std::unique_ptr<GPT> load_model(Backend& backend, const std::filesystem::path& dir, DType dtype = DType::f32);

}  // namespace ct
