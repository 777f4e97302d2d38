#include "train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <set>
#include <vector>

#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "text/tokenizer.h"
#include "util/error.h"
#include "util/fault_point.h"
#include "util/files.h"
#include "util/folder_checksums.h"
#include "util/json.h"

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

// json_from_text: every nlohmann exception (a number beyond double is out_of_range, not a
// parse_error) and JSON nested too deep become errors naming the file and the field.
Json parse_json(const SafetensorsFile& file, const std::string& key) {
  return json_from_text(file.metadata_value(key), str(file.path().string(), ": __metadata__ field '", key, "'"));
}

// Doubles as text that reads back to the same value.
std::string exact(double v) { return str(std::setprecision(17), v); }

}  // namespace

uint64_t checkpoint_bytes_upper_bound(const ModelConfig& config) {
  return static_cast<uint64_t>(config.parameter_count()) * 3 * sizeof(float) + (uint64_t{16} << 20);
}

void replace_directory(const fs::path& staged, const fs::path& dir) {
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  auto fail_with = [&](const char* what, int error) {
    fail(dir.string(), ": cannot ", what, ": ", std::strerror(error), " (the previous checkpoint, if any, is intact)");
  };
  if (fs::exists(dir)) {
    // One atomic step: `dir` is the old folder until the exchange and the new one after it, so no
    // moment exists without a complete `dir`, and a crash leaves at most a staged folder to clean up.
    if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
      fault_point("checkpoint.swapped");
      fsync_path(parent);
      std::error_code ec;
      fs::remove_all(staged, ec);  // now the old checkpoint
      return;
    }
    // A file system without RENAME_EXCHANGE: two renames, with a moment where only `dir`.old holds
    // a complete checkpoint; recover_checkpoint_directory() puts it back after a crash there.
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) fail_with("swap in the new checkpoint", errno);
    const fs::path old = fs::path(dir.string() + ".old");
    std::error_code ec;
    fs::remove_all(old, ec);
    if (::rename(dir.c_str(), old.c_str()) != 0) fail_with("move the previous checkpoint aside", errno);
    fault_point("checkpoint.old_moved_aside");
    if (::rename(staged.c_str(), dir.c_str()) != 0) {
      const int error = errno;
      ::rename(old.c_str(), dir.c_str());
      fail_with("move the new checkpoint into place", error);
    }
    fault_point("checkpoint.swapped");
    fsync_path(parent);
    fs::remove_all(old, ec);
    return;
  }
  if (::rename(staged.c_str(), dir.c_str()) != 0) fail_with("move the new checkpoint into place", errno);
  fault_point("checkpoint.swapped");
  fsync_path(parent);
}

void recover_checkpoint_directory(const fs::path& dir) {
  const fs::path old = fs::path(dir.string() + ".old");
  std::error_code ec;
  if (!fs::exists(dir, ec) && fs::is_directory(old, ec)) {
    // A crash between replace_directory's two renames: the previous checkpoint is complete.
    check(::rename(old.c_str(), dir.c_str()) == 0, old.string(), ": cannot move back to ", dir.string(), ": ",
          std::strerror(errno));
  }
  fs::remove_all(old, ec);
  // Staged folders of crashed writers (`dir`.tmp.<pid>); their process is gone, since a run folder
  // has one trainer at a time.
  const std::string prefix = dir.filename().string() + ".tmp.";
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind(prefix, 0) == 0) stale.push_back(it->path());
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

void save_training_checkpoint(const fs::path& dir, GPT& model, const Optimizer& optimizer,
                              const CheckpointContents& contents, const fs::path& tokenizer_dir) {
  recover_checkpoint_directory(dir);
  const fs::path staged = fs::path(dir.string() + str(".tmp.", ::getpid()));
  std::error_code ec;
  ensure_directory(staged);
  try {
    const TrainingProgress& p = contents.progress;
    save_model(model, staged, {{"step", std::to_string(p.step)}, {"recipe_sha256", contents.recipe_sha256}});
    fault_point("checkpoint.model_written");
    if (!tokenizer_dir.empty()) {  // under the current names, whichever the data folder's tokenizer has
      write_file_atomic(staged / kTokenizerTiktokenFile, read_file(tokenizer_dir / kTokenizerTiktokenFile));
      write_file_atomic(staged / kTokenizerJsonFile, read_file(tokenizer_json_path(tokenizer_dir)));
    }

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
    writer.set_metadata("world_size", std::to_string(contents.world_size));
    if (!contents.lineage.empty()) writer.set_metadata("lineage", contents.lineage);
    writer.write(staged / kTrainingStateFile);
    write_folder_checksums(staged);
    fsync_path(staged);
    fault_point("checkpoint.staged");
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
  verify_file_checksum(state_path);
  SafetensorsFile file(state_path);
  check(file.metadata_value("format") == "clocktrain-training-state/1", state_path.string(),
        ": __metadata__ field 'format': expected clocktrain-training-state/1");
  // Validate every tensor's name, dtype and shape before touching the model or the optimizer.
  const auto state = optimizer.state();
  std::set<std::string> expected;
  for (const auto& [name, buffer] : state) {
    file.expect(name, "F32", dims_of(buffer->shape()));
    expected.insert(name);
  }
  for (const SafetensorsEntry& e : file.entries())
    check(expected.count(e.name) == 1, state_path.string(), ": unexpected tensor '", e.name, "'");
  CheckpointContents out;
  // Counters and clocks are never negative, and the clocks are finite ("nan" and "inf" parse as
  // doubles, and a NaN clock would never reach the budget).
  auto counter = [&](const char* key) {
    const int64_t v = parse_int(file, key);
    check(v >= 0, state_path.string(), ": __metadata__ field '", key, "': expected a count >= 0, got ", v);
    return v;
  };
  auto seconds = [&](const char* key) {
    const double v = parse_double(file, key);
    check(std::isfinite(v) && v >= 0, state_path.string(), ": __metadata__ field '", key,
          "': expected finite seconds >= 0, got ", v);
    return v;
  };
  out.progress.step = counter("step");
  out.progress.tokens = counter("tokens");
  out.progress.clock_seconds = seconds("clock_seconds");
  out.progress.startup_seconds = seconds("startup_seconds");
  out.progress.nonfinite_steps = counter("nonfinite_steps");
  const int64_t optimizer_steps = counter("optimizer_steps");
  out.loader_state = parse_json(file, "loader_state");
  out.recipe = parse_json(file, "recipe");
  out.recipe_sha256 = file.metadata_value("recipe_sha256");
  // absent in checkpoints written before data-parallel training: one process
  out.world_size = file.metadata().count("world_size") ? static_cast<int>(counter("world_size")) : 1;
  check(out.world_size >= 1, state_path.string(), ": __metadata__ field 'world_size': expected >= 1, got ",
        out.world_size);
  if (file.metadata().count("lineage")) out.lineage = file.metadata_value("lineage");

  load_model_weights(model, dir / kModelWeightsFile);
  std::vector<float> host;
  for (const auto& [name, buffer] : state) {
    const SafetensorsEntry& e = *file.find(name);
    host.resize(static_cast<size_t>(e.numel()));
    // A NaN in the state would surface only as the next step's non-finite loss or gradient, blamed
    // on that step's data.
    file.read_finite_f32(e, host.data());
    model.backend().upload(*buffer, host.data(), DType::f32);
  }
  optimizer.set_steps_taken(optimizer_steps);
  return out;
}

}  // namespace ct
