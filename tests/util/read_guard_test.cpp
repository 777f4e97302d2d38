#include "util/read_guard.h"

#include <thread>

#include "test_support.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {
namespace {

// A fake data folder: corpus/, val/, eval_bundle/ with one file each.
struct FakeData {
  test::TempDir dir;
  DataLayout layout{dir.path()};
  FakeData() {
    for (auto sub : {"corpus", "val", "eval_bundle", "eval_bundle/eval_data"}) fs::create_directories(dir / sub);
    write_file_atomic(layout.corpus() / "train_000.jsonl.zst", "x");
    write_file_atomic(layout.val() / "val_000.jsonl.zst", "x");
    write_file_atomic(layout.eval_bundle() / "eval_data" / "arc.jsonl", "x");
    write_file_atomic(layout.eval_bundle() / "core.yaml", "x");
  }
};

std::string error_of(ReadGuard& guard, const fs::path& path) {
  try {
    guard.admit(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ReadGuard, RecordsAdmittedFilesOnceInOrder) {
  FakeData data;
  ReadGuard guard;
  guard.forbid_pinned_evaluation_data(data.layout);
  auto train = data.layout.corpus() / "train_000.jsonl.zst";
  auto other = data.dir / "tokenizer_clocktrain.json";
  EXPECT_EQ(guard.admit(train), fs::canonical(train));
  guard.admit(other);
  guard.admit(train);
  auto opened = guard.opened();
  ASSERT_EQ(opened.size(), 2u);
  EXPECT_EQ(opened[0], fs::canonical(train).string());
  EXPECT_EQ(opened[1], (fs::canonical(data.dir.path()) / "tokenizer_clocktrain.json").string());
  EXPECT_TRUE(guard.refused().empty());
}

TEST(ReadGuard, RefusesValidationAndEvalBundleWithClearError) {
  FakeData data;
  ReadGuard guard;
  guard.forbid_pinned_evaluation_data(data.layout);
  std::string val_error = error_of(guard, data.layout.val() / "val_000.jsonl.zst");
  EXPECT_NE(val_error.find("val_000.jsonl.zst"), std::string::npos) << val_error;
  EXPECT_NE(val_error.find("validation"), std::string::npos) << val_error;
  std::string bundle_error = error_of(guard, data.layout.eval_bundle() / "eval_data" / "arc.jsonl");
  EXPECT_NE(bundle_error.find("eval bundle"), std::string::npos) << bundle_error;
  // The folder itself is refused too, and a file that does not exist yet.
  EXPECT_FALSE(error_of(guard, data.layout.val()).empty());
  EXPECT_FALSE(error_of(guard, data.layout.val() / "not_there.jsonl").empty());
  EXPECT_EQ(guard.refused().size(), 4u);
  EXPECT_TRUE(guard.opened().empty());
}

TEST(ReadGuard, SeesThroughDotDotAndSymlinks) {
  FakeData data;
  ReadGuard guard;
  guard.forbid_pinned_evaluation_data(data.layout);
  EXPECT_FALSE(error_of(guard, data.layout.corpus() / ".." / "val" / "val_000.jsonl.zst").empty());
  fs::create_symlink(data.layout.val() / "val_000.jsonl.zst", data.layout.corpus() / "train_999.jsonl.zst");
  EXPECT_FALSE(error_of(guard, data.layout.corpus() / "train_999.jsonl.zst").empty());
  fs::create_directory_symlink(data.layout.eval_bundle(), data.dir / "innocent");
  EXPECT_FALSE(error_of(guard, data.dir / "innocent" / "core.yaml").empty());
}

TEST(ReadGuard, SiblingWithSharedPrefixIsNotForbidden) {
  FakeData data;
  fs::create_directories(data.dir / "val_extra");
  ReadGuard guard;
  guard.forbid_pinned_evaluation_data(data.layout);
  // "val_extra" starts with the characters "val" but is not under val/.
  EXPECT_EQ(error_of(guard, data.dir / "val_extra" / "notes.txt"), "");
}

TEST(ReadGuard, AllowListRefusesEverythingOutside) {
  FakeData data;
  ReadGuard guard;
  guard.allow(data.layout.val());
  guard.allow(data.layout.eval_bundle());
  EXPECT_EQ(error_of(guard, data.layout.val() / "val_000.jsonl.zst"), "");
  std::string outside = error_of(guard, data.layout.corpus() / "train_000.jsonl.zst");
  EXPECT_NE(outside.find("outside the folders"), std::string::npos) << outside;
  EXPECT_EQ(guard.opened().size(), 1u);
  EXPECT_EQ(guard.refused().size(), 1u);
}

TEST(ReadGuard, PathIsUnderComparesWholeComponents) {
  EXPECT_TRUE(path_is_under("/a/b/c", "/a/b"));
  EXPECT_TRUE(path_is_under("/a/b", "/a/b"));
  EXPECT_TRUE(path_is_under("/a/b", "/a/b/"));
  EXPECT_FALSE(path_is_under("/a/bc", "/a/b"));
  EXPECT_FALSE(path_is_under("/a", "/a/b"));
}

TEST(ReadGuard, ThreadsMayShareOneGuard) {
  FakeData data;
  ReadGuard guard;
  guard.forbid_pinned_evaluation_data(data.layout);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) guard.admit(data.dir / ("shard_" + std::to_string((t * 50 + i) % 20)));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(guard.opened().size(), 20u);
}

}  // namespace
}  // namespace ct
