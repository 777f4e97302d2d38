#include "util/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include "util/error.h"
#include "util/sha256.h"

namespace ct {
namespace {

TEST(AtomicFile, WritesAndReplaces) {
  test::TempDir dir;
  auto path = dir / "out.txt";
  write_file_atomic(path, "first");
  EXPECT_EQ(read_file(path), "first");
  write_file_atomic(path, "second");
  EXPECT_EQ(read_file(path), "second");
  // No temporary file is left beside it.
  int entries = 0;
  for (auto& e : fs::directory_iterator(dir.path())) entries += e.is_regular_file();
  EXPECT_EQ(entries, 1);
}

TEST(AtomicFile, AbandonedWriterLeavesPreviousFileIntact) {
  test::TempDir dir;
  auto path = dir / "out.txt";
  write_file_atomic(path, "keep me");
  {
    AtomicWriter writer(path);
    writer.write("half");
    // destroyed without commit: as if an error was thrown mid-write
  }
  EXPECT_EQ(read_file(path), "keep me");
  int entries = 0;
  for (auto& e : fs::directory_iterator(dir.path())) entries += e.is_regular_file();
  EXPECT_EQ(entries, 1);
}

TEST(AtomicFile, UnwritableFolderGivesClearError) {
  if (::geteuid() == 0) {
    // root ignores permissions; use a path under a regular file instead.
    test::TempDir dir;
    write_file_atomic(dir / "file", "x");
    try {
      write_file_atomic(dir / "file" / "child", "y");
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("child"), std::string::npos) << e.what();
    }
    return;
  }
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0500);
  EXPECT_THROW(write_file_atomic(dir / "x", "y"), Error);
  ::chmod(dir.path().c_str(), 0700);
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  test::TempDir dir;
  write_file_atomic(dir / "abc", "abc");
  EXPECT_EQ(sha256_file(dir / "abc"), sha256_hex("abc"));
}

}  // namespace
}  // namespace ct
