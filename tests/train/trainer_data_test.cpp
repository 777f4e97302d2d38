// The trainer checks its prepared data folder before step 1: the tokenizer that the checkpoint will
// carry against the manifest's hash, every id of the train and held-out shards against the
// vocabulary, and a raw data folder given as --data is named as such.
#include <gtest/gtest.h>

#include "data/manifest.h"
#include "data/shard.h"
#include "train/train_test_support.h"
#include "train/trainer.h"
#include "util/sha256.h"

namespace ct {
namespace {

class TrainerDataTest : public test::TrainerFixture {
 protected:
  // A copy of the suite's prepared folder, to damage.
  fs::path copy_of_data() {
    const fs::path copy = scratch_.path() / "data";
    fs::copy(data_, copy, fs::copy_options::recursive);
    return copy;
  }
  static Recipe short_recipe() {
    Recipe r = test::tiny_recipe();
    r.steps = 4;
    r.eval_every_steps = 2;
    return r;
  }
};

// Two tokens of tokenizer.tiktoken swapped: training exited 0 and its checkpoint carried the
// altered tokenizer, so the evaluator scored the model with another tokenizer than it learned.
TEST_F(TrainerDataTest, ATokenizerThatIsNotTheManifestsIsRefusedBeforeTraining) {
  TrainOptions o = options("swapped", short_recipe());
  o.data_dir = copy_of_data();
  test::swap_tiktoken_tokens(o.data_dir / "tokenizer" / "tokenizer.tiktoken", 97, 98);
  const std::string message = test::error_of([&] { train(o); });
  EXPECT_NE(message.find((o.data_dir / "tokenizer").string() + ": the tokenizer's SHA-256 is "), std::string::npos)
      << message;
  EXPECT_NE(message.find("the tokenizer files changed after preparation"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(o.out_dir)) << "nothing was written";
}

// An id outside the vocabulary in the held-out shard (its manifest record updated to match, so only
// the id is wrong) was found at the first held-out evaluation, after training steps, by the
// embedding, naming neither file nor offset.
TEST_F(TrainerDataTest, AnIdOutsideTheVocabularyInTheHeldOutShardIsRefusedBeforeStep1) {
  TrainOptions o = options("bad_id", short_recipe());
  o.data_dir = copy_of_data();
  Manifest manifest = load_manifest(o.data_dir);
  for (ShardRecord& record : manifest.shards) {
    if (record.split != "heldout") continue;
    const fs::path path = o.data_dir / record.name;
    std::vector<int32_t> tokens = test::read_tokens({path});
    ASSERT_GT(tokens.size(), 1000u);
    tokens[1000] = 300;
    const WrittenShard written = write_shard(path, tokens, manifest.shard_version);
    record.bytes = written.bytes;
    record.sha256 = written.sha256;
  }
  save_manifest(manifest, o.data_dir / "manifest.json");
  const std::string message = test::error_of([&] { train(o); });
  EXPECT_NE(message.find("heldout_000.bin: token 1000 (byte 3024) is 300, outside the vocabulary [0, 257)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(fs::exists(o.out_dir / "metrics.jsonl")) << "no step ran";
}

// --data of a raw data folder suggested `data prepare --out` into that folder (the shipped data).
TEST_F(TrainerDataTest, ARawDataFolderGivenAsDataIsNamedWithTheCommandThatPreparesIt) {
  TrainOptions o = options("raw", short_recipe());
  o.data_dir = data_.parent_path() / "raw";  // make_test_data's corpus/
  const std::string message = test::error_of([&] { train(o); });
  EXPECT_NE(message.find(o.data_dir.string() + " is a raw data folder (it holds corpus/)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("`clocktrain data prepare --data " + o.data_dir.string() + " --out runs/data`"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("--out " + o.data_dir.string()), std::string::npos) << message;
}

}  // namespace
}  // namespace ct
