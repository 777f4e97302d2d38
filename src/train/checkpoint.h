#pragma once
// A resumable training checkpoint: the model checkpoint of model/checkpoint.h (model.safetensors,
// config.json, the tokenizer files) plus training_state.safetensors, which holds every optimizer
// state tensor (f32) and, in its __metadata__, the step, tokens, training clock, the optimizer's
// step count, the loader's position (JSON) and the recipe; and SHA256SUMS, the SHA-256 of each of
// those files (util/folder_checksums.h), written last.
//
// The folder is written as a whole: every file goes into a temporary sibling folder (each file
// atomic, fsynced), which then replaces the previous folder in one atomic exchange (renameat2
// RENAME_EXCHANGE). A crash (kill -9, power loss) or a write error (full disk, file size limit)
// leaves either the previous checkpoint or the new one, never a mix or a half-written file under the
// final name. tests/train/crash_resume_test.cpp kills the trainer at every step of this.
#include <cstdint>
#include <filesystem>
#include <string>

#include "model/gpt.h"
#include "optim/optimizer.h"
#include "util/json.h"

namespace ct {

inline constexpr const char* kTrainingStateFile = "training_state.safetensors";

struct TrainingProgress {
  int64_t step = 0;                 // optimizer steps completed (including skipped ones)
  int64_t tokens = 0;               // tokens trained on so far
  double clock_seconds = 0.0;       // the training clock (docs/harness.md)
  double startup_seconds = 0.0;     // startup excluded from the clock, summed over resumes
  int64_t nonfinite_steps = 0;      // steps with a NaN/Inf loss or gradient so far
};

struct CheckpointContents {
  TrainingProgress progress;
  Json loader_state;                // the data loader's position (data/loader.h to_json)
  Json recipe;                      // the resolved recipe (train/recipe.h to_json)
  std::string recipe_sha256;
  int world_size = 1;               // the processes that trained it (a resume needs as many: data/loader.h)
  std::string lineage;              // the run's id (train/run_folder.h); "" in checkpoints written before it
};

// An upper bound on the bytes of one checkpoint of a model of this shape: the f32 weights and at
// most two f32 optimizer moments per weight (AdamW's; Muon keeps one), plus 16 MiB for the tokenizer,
// config and headers. The trainer needs room for two (the staged one beside the previous one).
uint64_t checkpoint_bytes_upper_bound(const ModelConfig& config);

// Writes model + config + tokenizer files (copied from tokenizer_dir, when not empty) + the training
// state into `dir`, replacing it as a whole.
void save_training_checkpoint(const std::filesystem::path& dir, GPT& model, const Optimizer& optimizer,
                              const CheckpointContents& contents, const std::filesystem::path& tokenizer_dir);

// Reads the weights into `model` and the optimizer state into `optimizer` (each file checked
// against SHA256SUMS where the folder has one, names, dtypes and shapes checked first, every value
// checked finite as it is read), and returns the rest. Errors name the file and the field or tensor;
// after one, the model and optimizer are partly loaded and must not be used.
CheckpointContents load_training_checkpoint(const std::filesystem::path& dir, GPT& model, Optimizer& optimizer);

// Replaces folder `dir` by `staged` (a sibling): an atomic exchange, then the old one is removed. On a
// file system without RENAME_EXCHANGE: rename the old one to `dir`.old, rename, remove the old.
void replace_directory(const std::filesystem::path& staged, const std::filesystem::path& dir);

// Repairs what a crash in save_training_checkpoint() can leave beside checkpoint folder `dir`: puts
// `dir`.old back when `dir` is missing (a crash between the fallback's two renames) and removes
// `dir`.old and staged folders (`dir`.tmp.<pid>). The trainer calls it before resuming and before
// each checkpoint.
void recover_checkpoint_directory(const std::filesystem::path& dir);

}  // namespace ct
