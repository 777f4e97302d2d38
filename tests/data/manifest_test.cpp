// The manifest: exact round trip, a hash of its canonical content, and clear errors on bad files.
#include "data/manifest.h"

#include "data_test_support.h"
#include "util/error.h"

namespace ct {
namespace {

using test::TempDir;

Manifest sample_manifest() {
  Manifest m;
  m.tokenizer_sha256 = std::string(64, 'a');
  m.vocab_size = 8192;
  m.bos_id = 8191;
  m.shard_version = 1;
  m.settings = Json{{"shard_tokens", 100}, {"heldout_tokens", 10}};
  m.summary = Json{{"corpus_documents", 3}};
  m.sources = {{"corpus/train_000.jsonl.zst", "train", 1234, std::string(64, 'c')}};
  m.shards = {{"train_000.bin", "train", 100, 2, 1224, std::string(64, '1')},
              {"train_001.bin", "train", 50, 1, 1124, std::string(64, '2')},
              {"heldout_000.bin", "heldout", 12, 1, 1048, std::string(64, '3')},
              {"val_000.bin", "val", 30, 2, 1084, std::string(64, '4')}};
  return m;
}

using test::error_of;

TEST(Manifest, RoundTripThroughAFile) {
  TempDir dir;
  Manifest m = sample_manifest();
  save_manifest(m, dir / "manifest.json");
  Manifest back = load_manifest(dir.path());
  EXPECT_EQ(to_json(back), to_json(m));
  EXPECT_EQ(back.shards.size(), 4u);
  EXPECT_EQ(back.shards[2].split, "heldout");
  EXPECT_EQ(back.tokens_of("train"), 150);
  EXPECT_EQ(back.documents_of("train"), 3);
  EXPECT_EQ(back.shards_of("val").size(), 1u);
  EXPECT_EQ(manifest_file_sha256(dir.path()), manifest_sha256(m));
}

TEST(Manifest, HashIgnoresLayoutButNotContent) {
  TempDir dir;
  Manifest m = sample_manifest();
  write_file_atomic(dir / "a.json", to_json(m).dump(4));
  write_file_atomic(dir / "b.json", to_json(m).dump());
  EXPECT_EQ(manifest_file_sha256(dir / "a.json"), manifest_file_sha256(dir / "b.json"));
  EXPECT_EQ(manifest_sha256(m).size(), 64u);
  Manifest changed = m;
  changed.shards[1].sha256 = std::string(64, '9');
  EXPECT_NE(manifest_sha256(changed), manifest_sha256(m));
}

TEST(Manifest, ErrorsNameTheFileAndField) {
  TempDir dir;
  auto write_and_load = [&](const Json& j) {
    write_file_atomic(dir / "manifest.json", j.dump());
    return error_of([&] { load_manifest(dir.path()); });
  };
  Json good = to_json(sample_manifest());

  Json bad = good;
  bad["shards"][1]["split"] = "test";
  std::string message = write_and_load(bad);
  EXPECT_NE(message.find("manifest.json: shards[1]: field 'split': expected train, heldout or val"),
            std::string::npos)
      << message;

  bad = good;
  bad["shards"][0]["name"] = "../corpus/secret.bin";
  message = write_and_load(bad);
  EXPECT_NE(message.find("shards[0]: field 'name': expected a file name inside the folder"), std::string::npos)
      << message;

  bad = good;
  bad["shards"][1]["name"] = "train_000.bin";
  message = write_and_load(bad);
  EXPECT_NE(message.find("listed twice"), std::string::npos) << message;

  bad = good;
  bad["shards"][3].erase("sha256");
  message = write_and_load(bad);
  EXPECT_NE(message.find("shards[3]: missing field 'sha256'"), std::string::npos) << message;

  bad = good;
  bad["version"] = 2;
  message = write_and_load(bad);
  EXPECT_NE(message.find("field 'version': this build reads version 1, got 2"), std::string::npos) << message;

  bad = good;
  bad["format"] = "something-else";
  message = write_and_load(bad);
  EXPECT_NE(message.find("field 'format'"), std::string::npos) << message;

  write_file_atomic(dir / "manifest.json", "{\"format\": ");
  message = error_of([&] { load_manifest(dir.path()); });
  EXPECT_NE(message.find("manifest.json: invalid JSON"), std::string::npos) << message;

  fs::remove(dir / "manifest.json");
  message = error_of([&] { load_manifest(dir.path()); });
  EXPECT_NE(message.find("no manifest"), std::string::npos) << message;
}

}  // namespace
}  // namespace ct
