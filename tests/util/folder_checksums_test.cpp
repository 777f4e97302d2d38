// SHA256SUMS (util/folder_checksums.h): written in sha256sum's format, read strictly, and a changed
// byte of a listed file refused naming the file.
#include <gmock/gmock.h>

#include "test_support.h"
#include "util/files.h"
#include "util/folder_checksums.h"
#include "util/sha256.h"

namespace ct {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using test::error_of;

TEST(FolderChecksums, WrittenInSha256sumFormatAndVerified) {
  test::TempDir dir;
  write_file_atomic(dir / "b.bin", std::string("\x00\x01\x02", 3));
  write_file_atomic(dir / "a.json", "{}\n");
  write_folder_checksums(dir.path());
  EXPECT_EQ(read_file(dir / "SHA256SUMS"),
            sha256_hex("{}\n") + "  a.json\n" + sha256_hex(std::string("\x00\x01\x02", 3)) + "  b.bin\n");
  EXPECT_EQ(verify_file_checksum(dir / "b.bin"), sha256_hex(std::string("\x00\x01\x02", 3)));
  if (std::system("sha256sum --version >/dev/null 2>&1") == 0) {
    const auto r = test::run_command("cd " + dir.path().string() + " && sha256sum -c SHA256SUMS");
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  // Written again (a folder rewritten), SHA256SUMS does not list itself.
  write_folder_checksums(dir.path());
  EXPECT_EQ(parse_folder_checksums(read_file(dir / "SHA256SUMS"), "SHA256SUMS").size(), 2u);
}

TEST(FolderChecksums, AChangedByteIsAnErrorNamingTheFile) {
  test::TempDir dir;
  write_file_atomic(dir / "weights.bin", std::string(1000, 'w'));
  write_file_atomic(dir / "other.txt", "x");
  write_folder_checksums(dir.path());
  test::flip_byte(dir / "weights.bin", 500, 0x01);
  EXPECT_THAT(error_of([&] { verify_file_checksum(dir / "weights.bin"); }),
              AllOf(HasSubstr((dir / "weights.bin").string() + ": SHA-256 "),
                    HasSubstr(" differs from " + sha256_hex(std::string(1000, 'w')) + " recorded in " +
                              (dir / "SHA256SUMS").string())));
  EXPECT_EQ(verify_file_checksum(dir / "other.txt"), sha256_hex("x"));  // each file on its own
  // A file SHA256SUMS does not list is refused too: it was not there when the folder was written.
  write_file_atomic(dir / "added.txt", "y");
  EXPECT_THAT(error_of([&] { verify_file_checksum(dir / "added.txt"); }),
              HasSubstr((dir / "SHA256SUMS").string() + ": does not list added.txt"));
}

TEST(FolderChecksums, AFolderWithoutSha256SumsIsNotVerified) {
  test::TempDir dir;
  write_file_atomic(dir / "old.bin", "written before checksums");
  EXPECT_EQ(verify_file_checksum(dir / "old.bin"), sha256_hex("written before checksums"));
}

TEST(FolderChecksums, TheParserIsStrict) {
  const std::string hash = sha256_hex("a");
  const auto error = [](const std::string& text) {
    return error_of([&] { parse_folder_checksums(text, "ckpt/SHA256SUMS"); });
  };
  EXPECT_EQ(parse_folder_checksums("", "SHA256SUMS").size(), 0u);
  EXPECT_EQ(parse_folder_checksums(hash + "  a\n" + hash + "  b\n", "SHA256SUMS").at("b"), hash);
  EXPECT_THAT(error(hash + "  a"), HasSubstr("ckpt/SHA256SUMS:1: expected a newline at the end of the line"));
  EXPECT_THAT(error(hash + "  a\n\n"), HasSubstr("ckpt/SHA256SUMS:2: expected '<64 lowercase hex digits>  <file"));
  EXPECT_THAT(error(hash.substr(1) + "  a\n"), HasSubstr("ckpt/SHA256SUMS:1: expected '<64 lowercase hex digits>"));
  std::string upper = hash;
  upper[0] = 'A';
  upper[1] = 'F';
  EXPECT_THAT(error(upper + "  a\n"), HasSubstr("ckpt/SHA256SUMS:1: expected '<64 lowercase hex digits>"));
  std::string bad_digit = hash;
  bad_digit[10] = 'g';
  EXPECT_THAT(error(hash + "  a\n" + bad_digit + "  b\n"), HasSubstr("ckpt/SHA256SUMS:2: expected '<64 lowercase"));
  EXPECT_THAT(error(hash + " *a\n"), HasSubstr("ckpt/SHA256SUMS:1: expected two spaces between the hash"));
  EXPECT_THAT(error(hash + " a\n"), HasSubstr("ckpt/SHA256SUMS:1: expected two spaces between the hash"));
  EXPECT_THAT(error(hash + "  \n"), HasSubstr("ckpt/SHA256SUMS:1: no file name after the hash"));
  EXPECT_THAT(error(hash + "  ../model.safetensors\n"),
              HasSubstr("ckpt/SHA256SUMS:1: '../model.safetensors' is not a plain file name"));
  EXPECT_THAT(error(hash + "  ..\n"), HasSubstr("ckpt/SHA256SUMS:1: '..' is not a file name"));
  EXPECT_THAT(error(hash + "  SHA256SUMS\n"), HasSubstr("ckpt/SHA256SUMS:1: SHA256SUMS cannot list itself"));
  EXPECT_THAT(error(hash + "  a\r\n"), HasSubstr("ckpt/SHA256SUMS:1: the file name holds a control character"));
  EXPECT_THAT(error(hash + "  a\n" + hash + "  b\n" + hash + "  a\n"),
              HasSubstr("ckpt/SHA256SUMS:3: 'a' is listed twice (first on line 1)"));
  // The writer refuses what the reader would.
  EXPECT_THAT(error_of([&] { folder_checksums_text({{"a/b", hash}}); }), HasSubstr("cannot list 'a/b'"));
  EXPECT_THAT(error_of([&] { folder_checksums_text({{"a", "xyz"}}); }), HasSubstr("expected a SHA-256 of 64"));
}

}  // namespace
}  // namespace ct
