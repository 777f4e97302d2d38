#include "train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <iomanip>
#include <set>
#include <vector>

#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

std::vector<int64_t> dims_of(const Shape& shape) {
  std::vector<int64_t> dims;
  for (int i = 0; i < shape.ndim; ++i) dims.push_back(shape[i]);
  return dims;
}

void fsync_path(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

int64_t parse_int(const SafetensorsFile& file, const std::string& key) {
  const std::string text = file.metadata_value(key);
  try {
    size_t used = 0;
    int64_t v = std::stoll(text, &used);
    check(used == text.size(), "");
    return v;
  } catch (const std::exception&) {
    fail(file.path().string(), ": __metadata__ field '", key, "': expected an integer, got '", text, "'");
  }
}

double parse_double(const SafetensorsFile& file, const std::string& key) {
  const std::string text = file.metadata_value(key);
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    check(used == text.size(), "");
    return v;
  } catch (const std::exception&) {
    fail(file.path().string(), ": __metadata__ field '", key, "': expected a number, got '", text, "'");
  }
}

Json parse_json(const SafetensorsFile& file, const std::string& key) {
  try {
    return Json::parse(file.metadata_value(key));
  } catch (const nlohmann::json::parse_error& e) {
    fail(file.path().string(), ": __metadata__ field '", key, "': invalid JSON at byte ", e.byte);
  }
}

// Doubles as text that reads back to the same value.
std::string exact(double v) { return str(std::setprecision(17), v); }

}  // namespace

void replace_directory(const fs::path& staged, const fs::path& dir) {
  const fs::path old = fs::path(dir.string() + ".old");
  std::error_code ec;
  fs::remove_all(old, ec);
  if (fs::exists(dir)) fs::rename(dir, old);
  fs::rename(staged, dir);
  fsync_path(dir.parent_path().empty() ? fs::path(".") : dir.parent_path());
  fs::remove_all(old, ec);
}

void save_training_checkpoint(const fs::path& dir, GPT& model, const Optimizer& optimizer,
                              const CheckpointContents& contents, const fs::path& tokenizer_dir) {
  const fs::path staged = fs::path(dir.string() + str(".tmp.", ::getpid()));
  std::error_code ec;
  fs::remove_all(staged, ec);
  ensure_directory(staged);
  try {
    const TrainingProgress& p = contents.progress;
    save_model(model, staged, {{"step", std::to_string(p.step)}, {"recipe_sha256", contents.recipe_sha256}});
    if (!tokenizer_dir.empty())
      for (const char* name : {"tokenizer.tiktoken", "tokenizer.json"})
        write_file_atomic(staged / name, read_file(tokenizer_dir / name));

    SafetensorsWriter writer;
    std::vector<std::vector<float>> host;
    const auto state = optimizer.state();
    host.resize(state.size());
    for (size_t i = 0; i < state.size(); ++i) {
      const Buffer& b = *state[i].second;
      host[i].resize(static_cast<size_t>(b.shape().numel()));
      model.backend().download(host[i].data(), DType::f32, b);
      writer.add(state[i].first, "F32", dims_of(b.shape()), host[i].data());
    }
    writer.set_metadata("format", "clocktrain-training-state/1");
    writer.set_metadata("step", std::to_string(p.step));
    writer.set_metadata("tokens", std::to_string(p.tokens));
    writer.set_metadata("clock_seconds", exact(p.clock_seconds));
    writer.set_metadata("startup_seconds", exact(p.startup_seconds));
    writer.set_metadata("nonfinite_steps", std::to_string(p.nonfinite_steps));
    writer.set_metadata("optimizer_steps", std::to_string(optimizer.steps_taken()));
    writer.set_metadata("loader_state", contents.loader_state.dump());
    writer.set_metadata("recipe", contents.recipe.dump());
    writer.set_metadata("recipe_sha256", contents.recipe_sha256);
    writer.write(staged / kTrainingStateFile);
    fsync_path(staged);
    replace_directory(staged, dir);
  } catch (...) {
    fs::remove_all(staged, ec);
    throw;
  }
}

CheckpointContents load_training_checkpoint(const fs::path& dir, GPT& model, Optimizer& optimizer) {
  check(fs::is_directory(dir), dir.string(), ": not a checkpoint folder");
  const ModelConfig saved = load_model_config(dir);
  check(to_json(saved) == to_json(model.config()), (dir / kModelConfigFile).string(),
        ": the checkpoint's model shape differs from the recipe's model fields");
  const fs::path state_path = dir / kTrainingStateFile;
  check(fs::exists(state_path), state_path.string(), ": missing (a checkpoint without training state cannot be resumed)");
  SafetensorsFile file(state_path);
  check(file.metadata_value("format") == "clocktrain-training-state/1", state_path.string(),
        ": __metadata__ field 'format': expected clocktrain-training-state/1");
  // Validate every tensor before touching the model or the optimizer.
  const auto state = optimizer.state();
  std::set<std::string> expected;
  for (const auto& [name, buffer] : state) {
    file.expect(name, "F32", dims_of(buffer->shape()));
    expected.insert(name);
  }
  for (const SafetensorsEntry& e : file.entries())
    check(expected.count(e.name) == 1, state_path.string(), ": unexpected tensor '", e.name, "'");
  CheckpointContents out;
  out.progress.step = parse_int(file, "step");
  out.progress.tokens = parse_int(file, "tokens");
  out.progress.clock_seconds = parse_double(file, "clock_seconds");
  out.progress.startup_seconds = parse_double(file, "startup_seconds");
  out.progress.nonfinite_steps = parse_int(file, "nonfinite_steps");
  const int64_t optimizer_steps = parse_int(file, "optimizer_steps");
  out.loader_state = parse_json(file, "loader_state");
  out.recipe = parse_json(file, "recipe");
  out.recipe_sha256 = file.metadata_value("recipe_sha256");

  load_model_weights(model, dir / kModelWeightsFile);
  std::vector<float> host;
  for (const auto& [name, buffer] : state) {
    const SafetensorsEntry& e = *file.find(name);
    host.resize(static_cast<size_t>(e.numel()));
    file.read(e, host.data());
    model.backend().upload(*buffer, host.data(), DType::f32);
  }
  optimizer.set_steps_taken(optimizer_steps);
  return out;
}

}  // namespace ct
