// A prepared data folder checked against its manifest before use: the tokenizer against the
// manifest's hash, manifest.json against the copy pinned at preparation, every shard's size and
// header against its record, and the message for a raw data folder given where a prepared one is due.
#include "data/prepared_folder.h"

#include "data/prepare.h"
#include "data_test_support.h"
#include "util/error.h"

namespace ct {
namespace {

using test::error_of;
using test::TempDir;

// dir/raw (corpus/ and val/) prepared into dir/prepared with the byte-level tokenizer, as `clocktrain
// data prepare` would (the tokenizer saved beside the shards).
fs::path prepare_folder(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> docs;
  for (int i = 0; i < 20; ++i) docs.push_back({std::to_string(i), std::string(40 + i, static_cast<char>('a' + i))});
  test::write_jsonl(dir / "raw" / "corpus" / "c.jsonl", docs);
  test::write_jsonl(dir / "raw" / "val" / "v.jsonl", {{"v", "validation"}});
  PrepareSettings settings;
  settings.data_dir = dir / "raw";
  settings.out_dir = dir / "prepared";
  settings.shard_tokens = 300;
  settings.heldout_tokens = 100;
  settings.progress = false;
  const Tokenizer tokenizer = test::byte_tokenizer();
  prepare_data(settings, *tokenizer_encoder(tokenizer));
  tokenizer.save(settings.out_dir / "tokenizer");
  return settings.out_dir;
}

TEST(PreparedFolder, AFolderAsPreparedPassesEveryCheck) {
  TempDir dir;
  const fs::path prepared = prepare_folder(dir.path());
  const Manifest manifest = load_prepared_manifest(prepared);
  EXPECT_NO_THROW(verify_prepared_tokenizer(prepared, manifest));
  EXPECT_NO_THROW(verify_prepared_folder(prepared, manifest));
  for (const auto& record : manifest.shards) {
    const ShardFile shard = open_listed_shard(prepared / record.name, record, manifest);
    EXPECT_NO_THROW(check_shard_token_ids(shard, manifest)) << record.name;
  }
}

// Training from such a folder exited 0 with the altered tokenizer in its checkpoint, and `clocktrain
// run` reused such a cache: nothing compared the tokenizer with manifest.tokenizer.sha256.
TEST(PreparedFolder, ATokenizerWithTwoTokensSwappedIsRefused) {
  TempDir dir;
  const fs::path prepared = prepare_folder(dir.path());
  const Manifest manifest = load_manifest(prepared);
  test::swap_tiktoken_tokens(prepared / "tokenizer" / "tokenizer.tiktoken", 97, 98);
  const std::string altered = Tokenizer::load(prepared / "tokenizer").sha256();
  for (const std::string& message : {error_of([&] { verify_prepared_tokenizer(prepared, manifest); }),
                                     error_of([&] { verify_prepared_folder(prepared, manifest); })}) {
    EXPECT_NE(message.find((prepared / "tokenizer").string() + ": the tokenizer's SHA-256 is " + altered),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("says the shards were made by " + manifest.tokenizer_sha256), std::string::npos) << message;
  }
  fs::remove(prepared / "tokenizer" / "tokenizer_clocktrain.json");
  EXPECT_NE(error_of([&] { verify_prepared_tokenizer(prepared, manifest); }).find("tokenizer_clocktrain.json: missing"),
            std::string::npos);
}

TEST(PreparedFolder, AManifestThatDiffersFromThePinnedOneIsRefused) {
  TempDir dir;
  const fs::path prepared = prepare_folder(dir.path());
  const Manifest pinned = load_manifest(prepared);
  Json changed = read_json_file(prepared / "manifest.json");
  changed["summary"]["corpus_documents"] = 21;
  write_file_atomic(prepared / "manifest.json", changed.dump(2));
  const std::string message = error_of([&] { verify_prepared_folder(prepared, pinned); });
  EXPECT_NE(message.find("manifest.json: its content (sha256 "), std::string::npos) << message;
  EXPECT_NE(message.find("differs from the manifest as prepared (sha256 " + manifest_sha256(pinned)), std::string::npos)
      << message;
}

TEST(PreparedFolder, AShardOfAnotherSizeOrTokenCountIsRefused) {
  TempDir dir;
  const fs::path prepared = prepare_folder(dir.path());
  const Manifest manifest = load_manifest(prepared);
  const ShardRecord record = manifest.shards_of("train").at(0);
  const fs::path path = prepared / record.name;
  const std::vector<int32_t> tokens = test::read_tokens({path});
  ASSERT_EQ(tokens.size(), 300u);  // a whole shard of --shard-tokens
  // A shorter shard, valid by itself.
  write_shard(path, std::vector<int32_t>(tokens.begin(), tokens.end() - 1), 1);
  std::string message = error_of([&] { verify_prepared_folder(prepared, manifest); });
  EXPECT_NE(
      message.find(str(path.string(), ": the file is ", record.bytes - 2, " bytes, the manifest says ", record.bytes)),
      std::string::npos)
      << message;
  // The listed size, but 150 tokens of 4 bytes: the header's count differs from the manifest's.
  write_shard(path, std::vector<int32_t>(tokens.begin(), tokens.begin() + 150), 2);
  message = error_of([&] { verify_prepared_folder(prepared, manifest); });
  EXPECT_NE(message.find(str(path.string(), ": holds 150 tokens (header, byte 8), the manifest says 300")),
            std::string::npos)
      << message;
  // A truncated file: the shard's own header check names it.
  write_shard(path, tokens, 1);
  const fs::path heldout = prepared / manifest.shards_of("heldout").at(0).name;
  const std::string bytes = read_file(heldout);
  write_file_atomic(heldout, bytes.substr(0, bytes.size() - 1));
  message = error_of([&] { verify_prepared_folder(prepared, manifest); });
  EXPECT_NE(message.find(heldout.string() + ": the header (byte 8) counts"), std::string::npos) << message;
  EXPECT_NE(message.find("(truncated)"), std::string::npos) << message;
}

TEST(PreparedFolder, ARawDataFolderIsNamedAsSuchWithTheCommandThatPreparesIt) {
  TempDir dir;
  const fs::path prepared = prepare_folder(dir.path());
  const fs::path raw = dir / "raw";
  std::string message = error_of([&] { load_prepared_manifest(raw); });
  EXPECT_NE(message.find(raw.string() + " is a raw data folder (it holds corpus/)"), std::string::npos) << message;
  EXPECT_NE(message.find("`clocktrain data prepare --data " + raw.string() + " --out runs/data`"), std::string::npos)
      << message;
  EXPECT_NE(message.find("`clocktrain run`"), std::string::npos) << message;
  message = error_of([&] { load_prepared_manifest(dir / "elsewhere"); });
  EXPECT_NE(message.find("is not a prepared data folder (make one with `clocktrain data prepare --out "),
            std::string::npos)
      << message;
  EXPECT_EQ(load_prepared_manifest(prepared).shards.size(), load_manifest(prepared).shards.size());
}

}  // namespace
}  // namespace ct
