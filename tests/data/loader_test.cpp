// The token loader: row semantics, determinism, exact continuation after save/restore, epochs,
// disjoint ranks, SHA-256 checks, and that the validation split can never be read through it.
#include "data/loader.h"

#include <algorithm>
#include <map>
#include <set>

#include "data/prepare.h"
#include "data_test_support.h"
#include "util/error.h"
#include "util/read_guard.h"

namespace ct {
namespace {

using test::TempDir;

// Shard s holds tokens s * 10000 + i for i in [0, n_s), so a token tells where it came from.
// Sizes are chosen so that some shards end with a partial window.
const std::vector<int64_t> kTrainShardTokens = {301, 250, 97, 180};

void make_data(const fs::path& dir) {
  Manifest m;
  m.tokenizer_sha256 = std::string(64, 'a');
  m.vocab_size = 65536;
  m.bos_id = 0;
  auto add = [&](const std::string& name, const std::string& split, int64_t n, int32_t base) {
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = base + static_cast<int32_t>(i);
    auto w = write_shard(dir / name, tokens, 1);
    m.shards.push_back({name, split, n, 1, w.bytes, w.sha256});
  };
  for (size_t s = 0; s < kTrainShardTokens.size(); ++s) {
    add(str("train_00", s, ".bin"), "train", kTrainShardTokens[s], static_cast<int32_t>(s) * 10000);
  }
  add("heldout_000.bin", "heldout", 120, 50000);
  add("val_000.bin", "val", 200, 60000);
  save_manifest(m, dir / "manifest.json");
}

struct Batch {
  std::vector<int32_t> inputs, targets;
  bool operator==(const Batch&) const = default;
};

Batch next(TokenLoader& loader) {
  Batch b;
  loader.next_batch(b.inputs, b.targets);
  return b;
}

using test::error_of;

TEST(Loader, RowsAreShiftedWindowsOfOneShard) {
  TempDir dir;
  make_data(dir.path());
  const int64_t B = 3, T = 8;
  TokenLoader loader(dir.path(), "train", B, T, 7);
  for (int step = 0; step < 20; ++step) {
    Batch b = next(loader);
    ASSERT_EQ(b.inputs.size(), static_cast<size_t>(B * T));
    ASSERT_EQ(b.targets.size(), static_cast<size_t>(B * T));
    for (int64_t r = 0; r < B; ++r) {
      const int32_t* in = &b.inputs[r * T];
      const int32_t* tg = &b.targets[r * T];
      int32_t start = in[0];
      EXPECT_EQ((start % 10000) % T, 0) << "a window starts at a multiple of seq_len";
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(in[t], start + t);       // consecutive tokens of one shard
        EXPECT_EQ(tg[t], start + t + 1);   // targets are the inputs shifted by one
      }
      int shard = start / 10000;
      EXPECT_LT(start % 10000 + T, kTrainShardTokens[shard]);  // the window's T+1 tokens lie in the shard
    }
  }
}

TEST(Loader, OneEpochCoversEveryWindowOnceThenWraps) {
  TempDir dir;
  make_data(dir.path());
  const int64_t B = 2, T = 10;
  TokenLoader loader(dir.path(), "train", B, T, 3);
  int64_t expected_rows = 0;
  for (int64_t n : kTrainShardTokens) expected_rows += (n - 1) / T;
  EXPECT_EQ(loader.rows_per_epoch(), expected_rows);
  std::multiset<int32_t> starts;
  std::vector<int32_t> epoch0;
  for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
    Batch b = next(loader);
    for (int64_t r = 0; r < B; ++r) {
      starts.insert(b.inputs[r * T]);
      epoch0.push_back(b.inputs[r * T]);
    }
    EXPECT_EQ(loader.state().epoch, 0);
  }
  std::multiset<int32_t> all;
  for (size_t s = 0; s < kTrainShardTokens.size(); ++s) {
    for (int64_t k = 0; k < (kTrainShardTokens[s] - 1) / T; ++k) all.insert(static_cast<int32_t>(s * 10000 + k * T));
  }
  if (expected_rows % B == 0) {
    EXPECT_EQ(starts, all);
  } else {
    EXPECT_EQ(starts.size() + static_cast<size_t>(expected_rows % B), all.size());
  }
  EXPECT_EQ(std::set<int32_t>(starts.begin(), starts.end()).size(), starts.size()) << "no window twice";
  // The next batch begins epoch 1, in a different order.
  std::vector<int32_t> epoch1;
  for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
    Batch b = next(loader);
    EXPECT_EQ(loader.state().epoch, 1);
    for (int64_t r = 0; r < B; ++r) epoch1.push_back(b.inputs[r * T]);
  }
  EXPECT_NE(epoch0, epoch1);
  EXPECT_EQ(std::multiset<int32_t>(epoch1.begin(), epoch1.end()).size(), epoch1.size());
}

TEST(Loader, DeterministicForASeed) {
  TempDir dir;
  make_data(dir.path());
  TokenLoader a(dir.path(), "train", 4, 16, 11), b(dir.path(), "train", 4, 16, 11), c(dir.path(), "train", 4, 16, 12);
  bool differs = false;
  for (int step = 0; step < 30; ++step) {  // several epochs
    Batch x = next(a), y = next(b), z = next(c);
    EXPECT_EQ(x, y);
    differs |= !(x == z);
  }
  EXPECT_TRUE(differs) << "another seed gives another order";
}

TEST(Loader, RestoreContinuesExactly) {
  TempDir dir;
  make_data(dir.path());
  TokenLoader original(dir.path(), "train", 3, 8, 5);
  for (int step = 0; step < 13; ++step) next(original);
  // Through JSON text, as a checkpoint stores it.
  LoaderState saved = loader_state_from_json(Json::parse(to_json(original.state()).dump()));
  EXPECT_EQ(saved, original.state());
  TokenLoader resumed(dir.path(), "train", 3, 8, 5);
  resumed.restore(saved);
  for (int step = 0; step < 40; ++step) {
    ASSERT_EQ(next(original), next(resumed)) << step;
    ASSERT_EQ(original.state(), resumed.state());
  }
}

TEST(Loader, RestoreRefusesAnotherSeedSplitOrData) {
  TempDir dir;
  make_data(dir.path());
  TokenLoader loader(dir.path(), "train", 2, 8, 5);
  next(loader);
  LoaderState state = loader.state();
  TokenLoader other_seed(dir.path(), "train", 2, 8, 6);
  EXPECT_NE(error_of([&] { other_seed.restore(state); }).find("seed 5"), std::string::npos);
  TokenLoader heldout(dir.path(), "heldout", 2, 8, 5);
  EXPECT_NE(error_of([&] { heldout.restore(state); }).find("split \"train\""), std::string::npos);
  LoaderState changed = state;
  changed.manifest_sha256 = std::string(64, '0');
  EXPECT_NE(error_of([&] { loader.restore(changed); }).find("prepared again"), std::string::npos);
}

TEST(Loader, RanksReadDisjointRowsThatTogetherMakeTheSingleRankBatch) {
  TempDir dir;
  make_data(dir.path());
  const int64_t B = 2, T = 8;
  const int W = 3;
  TokenLoader single(dir.path(), "train", B * W, T, 9);
  std::vector<std::unique_ptr<TokenLoader>> ranks;
  for (int r = 0; r < W; ++r) ranks.push_back(std::make_unique<TokenLoader>(dir.path(), "train", B, T, 9, r, W));
  for (int step = 0; step < 25; ++step) {
    Batch whole = next(single);
    std::vector<int32_t> joined;
    std::set<int32_t> starts;
    for (int r = 0; r < W; ++r) {
      Batch part = next(*ranks[r]);
      joined.insert(joined.end(), part.inputs.begin(), part.inputs.end());
      for (int64_t row = 0; row < B; ++row) starts.insert(part.inputs[row * T]);
    }
    EXPECT_EQ(joined, whole.inputs) << step;
    EXPECT_EQ(starts.size(), static_cast<size_t>(B * W)) << "ranks share no row";
    for (int r = 1; r < W; ++r) EXPECT_EQ(ranks[r]->state(), ranks[0]->state());
  }
}

TEST(Loader, RefusesTheValidationSplitAndNeverOpensItsShards) {
  TempDir dir;
  make_data(dir.path());
  std::string message = error_of([&] { TokenLoader(dir.path(), "val", 2, 8, 1); });
  EXPECT_NE(message.find("refusing split \"val\""), std::string::npos) << message;
  EXPECT_NE(error_of([&] { TokenLoader(dir.path(), "test", 2, 8, 1); }).find("split must be"), std::string::npos);

  for (const char* split : {"train", "heldout"}) {
    TokenLoader loader(dir.path(), split, 2, 8, 1);
    for (int step = 0; step < 3 * loader.batches_per_epoch() + 1; ++step) next(loader);
    auto paths = loader.paths_opened();
    EXPECT_EQ(paths.front(), dir / "manifest.json");
    std::set<std::string> names;
    for (const auto& p : paths) {
      EXPECT_EQ(p.parent_path(), dir.path());
      names.insert(p.filename().string());
    }
    EXPECT_EQ(names.count("val_000.bin"), 0u) << split;
    for (const auto& [name, sha] : loader.shards_read()) {
      EXPECT_EQ(name.rfind(split, 0), 0u) << name;
      EXPECT_EQ(sha.size(), 64u);
    }
    // A whole epoch opened every shard of the split, each once.
    EXPECT_EQ(loader.shards_read().size(), loader.manifest().shards_of(split).size());
  }
}

TEST(Loader, AReadGuardAdmitsEveryFileAndRefusesValidationData) {
  TempDir dir;
  fs::path data = dir / "data", prepared = dir / "prepared";
  fs::create_directories(data / "val");
  fs::create_directories(prepared);
  make_data(prepared);
  ReadGuard guard;
  guard.forbid_pinned_evaluation_data(DataLayout{data});
  {
    TokenLoader loader(prepared, "train", 2, 8, 1, 0, 1, &guard);
    // Made, the loader has opened the manifest and every shard of its split, in manifest order.
    std::vector<std::string> expected = {canonical_for_guard(prepared / "manifest.json").string()};
    for (const auto& s : loader.manifest().shards_of("train"))
      expected.push_back(canonical_for_guard(prepared / s.name).string());
    EXPECT_EQ(guard.opened(), expected);
    for (int step = 0; step < loader.batches_per_epoch(); ++step) next(loader);
    EXPECT_EQ(guard.opened(), expected);
    EXPECT_TRUE(guard.refused().empty());
  }
  // A shard that is really a file of the validation folder (a link) is refused when the loader is made.
  fs::rename(prepared / "train_002.bin", data / "val" / "moved.bin");
  fs::create_symlink(data / "val" / "moved.bin", prepared / "train_002.bin");
  std::string message = error_of([&] { TokenLoader(prepared, "train", 2, 8, 1, 0, 1, &guard); });
  EXPECT_NE(message.find("train_002.bin: refused"), std::string::npos) << message;
  ASSERT_EQ(guard.refused().size(), 1u);
  EXPECT_EQ(guard.refused()[0], canonical_for_guard(data / "val" / "moved.bin").string());
  // And a data folder inside val/ is refused at once, at its manifest.
  fs::rename(prepared, data / "val" / "prepared");
  message = error_of([&] { TokenLoader(data / "val" / "prepared", "train", 2, 8, 1, 0, 1, &guard); });
  EXPECT_NE(message.find("manifest.json: refused"), std::string::npos) << message;
}

TEST(Loader, ShardChangedAfterPreparationIsAnErrorNamingIt) {
  TempDir dir;
  make_data(dir.path());
  std::string bytes = read_file(dir / "train_002.bin");
  bytes[kShardHeaderBytes + 10] ^= 1;  // same size, one token changed
  write_file_atomic(dir / "train_002.bin", bytes);
  TokenLoader loader(dir.path(), "train", 2, 8, 1);
  std::string message = error_of([&] {
    for (int step = 0; step < loader.batches_per_epoch(); ++step) next(loader);
  });
  EXPECT_NE(message.find("train_002.bin: SHA-256"), std::string::npos) << message;
  EXPECT_NE(message.find("does not match the manifest"), std::string::npos) << message;

  fs::remove(dir / "train_001.bin");
  message = error_of([&] { TokenLoader(dir.path(), "train", 2, 8, 1); });
  EXPECT_NE(message.find("train_001.bin: listed in the manifest for split \"train\" but missing"), std::string::npos)
      << message;
}

// Sets one field of the record of shard `name` in dir/manifest.json.
void edit_shard_record(const fs::path& dir, const std::string& name, const std::string& field, const Json& value) {
  Json m = read_json_file(dir / "manifest.json");
  for (auto& s : m["shards"])
    if (s["name"] == name) s[field] = value;
  write_file_atomic(dir / "manifest.json", m.dump(2));
}

// The manifest's token count was trusted until the shard was first read: the first epoch's window
// order was sized from it (99999999999 / 8 windows of 8 bytes, 100 GB) before any comparison.
TEST(Loader, AManifestClaimingMoreTokensThanTheShardHoldsIsRefusedWhenTheLoaderIsMade) {
  TempDir dir;
  make_data(dir.path());
  edit_shard_record(dir.path(), "train_001.bin", "tokens", int64_t{99999999999});
  const std::string message = error_of([&] { TokenLoader(dir.path(), "train", 2, 8, 1); });
  EXPECT_NE(message.find("train_001.bin: holds 250 tokens (header, byte 8), the manifest says 99999999999"),
            std::string::npos)
      << message;
}

TEST(Loader, AManifestWhoseBytesDifferFromTheFileIsRefusedWhenTheLoaderIsMade) {
  TempDir dir;
  make_data(dir.path());
  const uint64_t bytes = fs::file_size(dir / "heldout_000.bin");
  edit_shard_record(dir.path(), "heldout_000.bin", "bytes", bytes + 2);
  const std::string message = error_of([&] { TokenLoader(dir.path(), "heldout", 2, 8, 1); });
  EXPECT_NE(message.find(str("heldout_000.bin: the file is ", bytes, " bytes, the manifest says ", bytes + 2)),
            std::string::npos)
      << message;
}

// An id the model's embedding cannot hold was found only when a batch holding it reached the model
// (for the held-out split, at the first held-out evaluation, after training), naming no file.
TEST(Loader, AnIdOutsideTheManifestsVocabularyIsRefusedWhenTheLoaderIsMade) {
  TempDir dir;
  make_data(dir.path());
  // The held-out shard holds ids 50000 .. 50119, the train shards ids below 30180.
  Json m = read_json_file(dir / "manifest.json");
  m["tokenizer"]["vocab_size"] = 50100;
  write_file_atomic(dir / "manifest.json", m.dump(2));
  const std::string message = error_of([&] { TokenLoader(dir.path(), "heldout", 2, 8, 1); });
  EXPECT_NE(message.find("heldout_000.bin: token 100 (byte 1224) is 50100, outside the vocabulary [0, 50100)"),
            std::string::npos)
      << message;
  TokenLoader train(dir.path(), "train", 2, 8, 1);
  next(train);
}

TEST(Loader, MovesWithItsPosition) {
  TempDir dir;
  make_data(dir.path());
  TokenLoader a(dir.path(), "train", 2, 8, 4), reference(dir.path(), "train", 2, 8, 4);
  next(a);
  next(reference);
  TokenLoader moved = std::move(a);
  EXPECT_EQ(next(moved), next(reference));
}

TEST(Loader, TooLittleDataForOneStepIsAnError) {
  TempDir dir;
  make_data(dir.path());
  std::string message = error_of([&] { TokenLoader(dir.path(), "heldout", 20, 8, 1); });
  EXPECT_NE(message.find("fewer than one step"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { TokenLoader(dir.path(), "train", 2, 8, 1, 2, 2); }).find("rank 2"), std::string::npos);
}

// The loader reads what prepare writes: every row of the held-out split is a window of its stream.
TEST(Loader, ReadsPreparedData) {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> docs;
  for (int i = 0; i < 30; ++i) docs.push_back({std::to_string(i), std::string(50 + i, 'a' + i % 26)});
  test::write_jsonl(dir / "data" / "corpus" / "c.jsonl", docs);
  test::write_jsonl(dir / "data" / "val" / "v.jsonl", {{"v", "validation"}});
  test::ByteEncoder encoder;
  PrepareSettings settings;
  settings.data_dir = dir / "data";
  settings.out_dir = dir / "out";
  settings.shard_tokens = 400;
  settings.heldout_tokens = 200;
  settings.progress = false;
  auto report = prepare_data(settings, encoder);
  TokenLoader loader(dir / "out", "train", 4, 16, 1);
  std::vector<int32_t> stream = test::read_tokens({dir / "out" / "train_000.bin", dir / "out" / "train_001.bin"});
  Batch b = next(loader);
  for (int32_t t : b.inputs) EXPECT_TRUE(t == 256 || (t >= 'a' && t <= 'z'));
  EXPECT_EQ(loader.manifest_sha256(), report.manifest_sha256);
}

}  // namespace
}  // namespace ct
