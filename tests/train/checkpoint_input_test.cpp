// Damaged or hostile training checkpoints and metrics logs: errors that name the file and the field,
// never another exception type (found while fuzzing the readers: fuzz/training_state_fuzz.cpp,
// fuzz/metrics_resume_fuzz.cpp).
#include <gmock/gmock.h>

#include <limits>

#include "model/safetensors.h"
#include "model/tiny_model.h"
#include "optim/optimizer.h"
#include "test_support.h"
#include "train/checkpoint.h"
#include "train/metrics_writer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/folder_checksums.h"
#include "util/sha256.h"

namespace ct {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class TrainingStateInput : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = test::cpu_backend(1);
    model_ = std::make_unique<GPT>(*backend_, test::tiny_config());
    model_->initialize(3);
    optimizer_ = std::make_unique<Optimizer>(*model_, OptimizerConfig{});
    save();
  }

  // Rewrites training_state.safetensors with one __metadata__ field replaced.
  void set_metadata(const std::string& key, const std::string& value) {
    const fs::path path = dir_ / "ckpt" / kTrainingStateFile;
    SafetensorsFile file(path);
    std::vector<std::vector<char>> data;
    SafetensorsWriter writer;
    for (const SafetensorsEntry& e : file.entries()) {
      data.emplace_back(e.end - e.begin);
      file.read(e, data.back().data());
    }
    size_t i = 0;
    for (const SafetensorsEntry& e : file.entries()) writer.add(e.name, e.dtype, e.shape, data[i++].data());
    for (const auto& [k, v] : file.metadata()) writer.set_metadata(k, k == key ? value : v);
    writer.write(path);
    write_folder_checksums(dir_ / "ckpt");  // a writer's change, not damage
  }

  // Saves the fixture's model and optimizer as the checkpoint (SHA256SUMS agrees with what is saved).
  void save() {
    CheckpointContents contents;
    contents.progress = {4, 256, 10.5, 1.5, 0};
    contents.loader_state = Json{{"epoch", 0}};
    contents.recipe = Json{{"name", "tiny"}};
    contents.recipe_sha256 = "abc";
    save_training_checkpoint(dir_ / "ckpt", *model_, *optimizer_, contents, {});
  }

  // Sets element `index` of a weight or optimizer state tensor.
  void set_element(const Buffer& buffer, int64_t index, float value) {
    std::vector<float> host(static_cast<size_t>(buffer.shape().numel()));
    backend_->download(host.data(), DType::f32, buffer);
    host.at(static_cast<size_t>(index)) = value;
    backend_->upload(buffer, host.data(), DType::f32);
  }

  std::string load_error() {
    try {
      load_training_checkpoint(dir_ / "ckpt", *model_, *optimizer_);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  test::TempDir dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<GPT> model_;
  std::unique_ptr<Optimizer> optimizer_;
};

TEST_F(TrainingStateInput, LoadsAsSaved) { EXPECT_EQ(load_error(), ""); }

// nlohmann::json throws out_of_range, not parse_error, for a number beyond double: it escaped.
TEST_F(TrainingStateInput, JsonMetadataErrorsNameTheField) {
  set_metadata("loader_state", R"({"epoch": 1e999})");
  EXPECT_THAT(load_error(), HasSubstr("training_state.safetensors: __metadata__ field 'loader_state': invalid JSON"));
  set_metadata("loader_state", std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_THAT(load_error(), HasSubstr("field 'loader_state': invalid JSON at byte 257: arrays/objects nested deeper"));
  set_metadata("loader_state", R"({"epoch": 0})");
  set_metadata("recipe", "{");
  EXPECT_THAT(load_error(), HasSubstr("__metadata__ field 'recipe': invalid JSON at byte"));
}

TEST_F(TrainingStateInput, CountersAndClocksMustBeSane) {
  set_metadata("clock_seconds", "nan");
  EXPECT_THAT(load_error(), HasSubstr("__metadata__ field 'clock_seconds': expected finite seconds >= 0, got nan"));
  set_metadata("clock_seconds", "10.5");
  set_metadata("startup_seconds", "-1");
  EXPECT_THAT(load_error(), HasSubstr("field 'startup_seconds': expected finite seconds >= 0"));
  set_metadata("startup_seconds", "1.5");
  set_metadata("step", "-4");
  EXPECT_THAT(load_error(), HasSubstr("__metadata__ field 'step': expected a count >= 0, got -4"));
  set_metadata("step", "4");
  EXPECT_EQ(load_error(), "");
}

// Issue 42: the checkpoint records every file's SHA-256 in sha256sum's format ...
TEST_F(TrainingStateInput, TheCheckpointListsEveryFileInSha256Sums) {
  const fs::path ckpt = dir_ / "ckpt";
  const FolderChecksums sums = parse_folder_checksums(read_file(ckpt / "SHA256SUMS"), "SHA256SUMS");
  ASSERT_EQ(sums.size(), 3u);
  for (const char* name : {"config.json", "model.safetensors", "training_state.safetensors"})
    EXPECT_EQ(sums.at(name), sha256_file(ckpt / name)) << name;
}

// ... and resuming refuses a changed byte in any file it reads, naming the file. Each change is one
// the reader accepted before: the sign of a weight or of an optimizer moment, a space of config.json
// turned into a tab.
TEST_F(TrainingStateInput, AChangedByteIsRefusedNamingTheFile) {
  const fs::path ckpt = dir_ / "ckpt";
  const int64_t space = static_cast<int64_t>(read_file(ckpt / "config.json").find("\n ")) + 1;
  const std::vector<std::pair<std::string, int64_t>> damages = {
      {"model.safetensors", -1}, {"training_state.safetensors", -1}, {"config.json", space}};
  for (const auto& [name, offset] : damages) {
    const unsigned char mask = name == "config.json" ? ' ' ^ '\t' : 0x80;
    test::flip_byte(ckpt / name, offset, mask);
    EXPECT_THAT(load_error(), AllOf(HasSubstr((ckpt / name).string() + ": SHA-256 "),
                                    HasSubstr(" recorded in " + (ckpt / "SHA256SUMS").string())))
        << name;
    test::flip_byte(ckpt / name, offset, mask);
    EXPECT_EQ(load_error(), "") << name;
  }
}

// Issue 42: a NaN written into the checkpoint (SHA256SUMS agrees) is refused at resume, naming the file,
// the tensor and the element: in a weight (a padding row of wte, vocab 200 padded to 256, which no
// token reads, so training would carry it on unseen) and in the optimizer state (whose NaN showed
// only as the next step's non-finite loss, blamed on its data).
TEST_F(TrainingStateInput, ANonFiniteWeightOrOptimizerStateIsRefusedNamingTheTensor) {
  Parameter& wte = model_->parameters().front();
  ASSERT_EQ(wte.spec.name, "transformer.wte.weight");
  set_element(wte.value, 250 * 32 + 1, std::numeric_limits<float>::quiet_NaN());
  save();
  const fs::path ckpt = dir_ / "ckpt";
  EXPECT_THAT(load_error(), HasSubstr((ckpt / "model.safetensors").string() +
                                      ": tensor 'transformer.wte.weight': element [250, 1] (flat index 8001) is nan"));
  set_element(wte.value, 250 * 32 + 1, 0.0f);
  const Buffer* moment = nullptr;
  for (const auto& [name, buffer] : optimizer_->state())
    if (name == "adamw.exp_avg_sq/lm_head.weight") moment = buffer;
  ASSERT_NE(moment, nullptr);
  set_element(*moment, 5, std::numeric_limits<float>::infinity());
  save();
  EXPECT_THAT(load_error(),
              HasSubstr((ckpt / "training_state.safetensors").string() +
                        ": tensor 'adamw.exp_avg_sq/lm_head.weight': element [0, 5] (flat index 5) is inf"));
  set_element(*moment, 5, 0.0f);
  save();
  EXPECT_EQ(load_error(), "");
}

// Resuming rereads metrics.jsonl; a line holding a number beyond double (out_of_range, not a
// parse_error) escaped. It is dropped like a line cut by a crash.
TEST(MetricsWriterResume, UnreadableLinesAreDropped) {
  test::TempDir dir;
  const fs::path path = dir / "metrics.jsonl";
  write_file_atomic(path, "{\"step\": 1, \"loss\": 2.0}\n{\"step\": 2, \"loss\": 1e999}\n{\"step\": 5}\n{\"step\": 3, \"lo");
  { MetricsWriter log(path, 3); }
  EXPECT_EQ(read_file(path), "{\"step\": 1, \"loss\": 2.0}\n");
}

}  // namespace
}  // namespace ct
