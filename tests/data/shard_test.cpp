// Token shards: the llm.c layout byte for byte, version 2 for large vocabularies, and every kind of
// damaged or foreign file refused with an error that names the file and offset.
#include "data/shard.h"

#include <cstring>
#include <fstream>

#include "data_test_support.h"
#include "util/error.h"
#include "util/sha256.h"

namespace ct {
namespace {

using test::TempDir;

using test::error_of;

int32_t header_int(const std::string& bytes, size_t index) {
  int32_t v;
  std::memcpy(&v, bytes.data() + index * 4, 4);
  return v;
}

TEST(Shard, Version1RoundTripAndExactLayout) {
  TempDir dir;
  std::vector<int32_t> tokens = {0, 1, 2, 255, 256, 8191, 65535, 42};
  auto written = write_shard(dir / "s.bin", tokens, 1);
  std::string bytes = read_file(dir / "s.bin");
  ASSERT_EQ(bytes.size(), kShardHeaderBytes + tokens.size() * 2);
  EXPECT_EQ(header_int(bytes, 0), 20240520);
  EXPECT_EQ(header_int(bytes, 1), 1);
  EXPECT_EQ(header_int(bytes, 2), static_cast<int32_t>(tokens.size()));
  for (size_t i = 3; i < kShardHeaderInts; ++i) ASSERT_EQ(header_int(bytes, i), 0) << i;
  uint16_t last;
  std::memcpy(&last, bytes.data() + bytes.size() - 2, 2);
  EXPECT_EQ(last, 42);
  EXPECT_EQ(written.tokens, 8);
  EXPECT_EQ(written.bytes, bytes.size());
  EXPECT_EQ(written.sha256, sha256_hex(bytes));

  ShardFile shard = ShardFile::open(dir / "s.bin");
  EXPECT_EQ(shard.version(), 1);
  EXPECT_EQ(shard.token_count(), 8);
  std::vector<int32_t> back(tokens.size());
  shard.copy_tokens(0, shard.token_count(), back.data());
  EXPECT_EQ(back, tokens);
  EXPECT_EQ(shard.token(6), 65535);
  EXPECT_EQ(shard.file_bytes().size(), bytes.size());
}

TEST(Shard, Version2HoldsLargeIds) {
  TempDir dir;
  EXPECT_EQ(shard_version_for_vocab(8192), 1);
  EXPECT_EQ(shard_version_for_vocab(65536), 1);
  EXPECT_EQ(shard_version_for_vocab(65537), 2);
  std::vector<int32_t> tokens = {0, 65536, 100000, 199999};
  write_shard(dir / "v2.bin", tokens, 2);
  EXPECT_EQ(fs::file_size(dir / "v2.bin"), kShardHeaderBytes + 4 * 4);
  ShardFile shard = ShardFile::open(dir / "v2.bin");
  EXPECT_EQ(shard.version(), 2);
  std::vector<int32_t> back(4);
  shard.copy_tokens(0, 4, back.data());
  EXPECT_EQ(back, tokens);
}

TEST(Shard, EmptyShardIsValid) {
  TempDir dir;
  write_shard(dir / "e.bin", {}, 1);
  EXPECT_EQ(ShardFile::open(dir / "e.bin").token_count(), 0);
}

TEST(Shard, IdTooLargeForVersion1IsAnErrorNamingTheIndex) {
  TempDir dir;
  std::vector<int32_t> tokens = {5, 6, 70000};
  std::string message = error_of([&] { write_shard(dir / "big.bin", tokens, 1); });
  EXPECT_NE(message.find("big.bin: token 2 is 70000"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "big.bin"));  // nothing left under the final name
}

TEST(Shard, ReadingOutsideTheShardIsAnError) {
  TempDir dir;
  write_shard(dir / "s.bin", std::vector<int32_t>{1, 2, 3}, 1);
  ShardFile shard = ShardFile::open(dir / "s.bin");
  int32_t out[4];
  EXPECT_THROW(shard.copy_tokens(1, 3, out), Error);
}

// The vocabulary check's scan: blocks of 64 Ki tokens, so a shard of 200,000 tokens has three whole
// blocks and a partial one; the first id at or above the limit is found wherever it lies.
TEST(Shard, FirstTokenAtOrAboveFindsTheFirstSuchIdInEveryBlockAndWidth) {
  TempDir dir;
  const int64_t n = 200000;
  for (int version : {1, 2}) {
    const int32_t limit = version == 1 ? 8192 : 100000;
    for (int64_t bad : {int64_t{0}, int64_t{65535}, int64_t{65536}, int64_t{150001}, n - 1}) {
      std::vector<int32_t> tokens(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = static_cast<int32_t>(i % limit);
      tokens[static_cast<size_t>(bad)] = limit;
      if (bad + 7 < n) tokens[static_cast<size_t>(bad + 7)] = limit + 5;  // a later one is not reported
      write_shard(dir / "s.bin", tokens, version);
      const ShardFile shard = ShardFile::open(dir / "s.bin");
      EXPECT_EQ(shard.first_token_at_or_above(limit), bad) << "version " << version << ", bad id at " << bad;
      EXPECT_EQ(shard.first_token_at_or_above(limit + 6), -1);
      EXPECT_EQ(shard.first_token_at_or_above(limit + 5), bad + 7 < n ? bad + 7 : -1);
    }
  }
  write_shard(dir / "e.bin", {}, 1);
  EXPECT_EQ(ShardFile::open(dir / "e.bin").first_token_at_or_above(0), -1);
}

class DamagedShard : public ::testing::Test {
 protected:
  void SetUp() override {
    write_shard(dir_ / "good.bin", std::vector<int32_t>{10, 20, 30, 40}, 1);
    good_ = read_file(dir_ / "good.bin");
  }
  std::string open_error(const std::string& bytes) {
    write_file_atomic(dir_ / "bad.bin", bytes);
    return error_of([&] { ShardFile::open(dir_ / "bad.bin"); });
  }
  TempDir dir_;
  std::string good_;
};

TEST_F(DamagedShard, Truncated) {
  std::string message = open_error(good_.substr(0, good_.size() - 1));
  EXPECT_NE(message.find("bad.bin: the header (byte 8) counts 4 tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("(truncated)"), std::string::npos) << message;
}

TEST_F(DamagedShard, TrailingBytes) {
  std::string message = open_error(good_ + "xx");
  EXPECT_NE(message.find("(trailing bytes)"), std::string::npos) << message;
}

TEST_F(DamagedShard, WrongMagic) {
  std::string bytes = good_;
  bytes[0] ^= 1;
  std::string message = open_error(bytes);
  EXPECT_NE(message.find("bad.bin: byte 0: expected magic 20240520"), std::string::npos) << message;
}

TEST_F(DamagedShard, UnknownVersion) {
  std::string bytes = good_;
  int32_t version = 3;
  std::memcpy(bytes.data() + 4, &version, 4);
  std::string message = open_error(bytes);
  EXPECT_NE(message.find("bad.bin: byte 4: unsupported version 3"), std::string::npos) << message;
}

TEST_F(DamagedShard, ForeignFileAndTooShort) {
  std::string message = open_error(std::string(2000, 'a'));  // a text file, long enough for a header
  EXPECT_NE(message.find("byte 0: expected magic"), std::string::npos) << message;
  message = open_error("short");
  EXPECT_NE(message.find("bad.bin: 5 bytes: too short for the 1024-byte shard header"), std::string::npos)
      << message;
}

// modded-nanogpt and llm.c read shards with numpy as below; ours must load there unchanged.
TEST(Shard, ReadableTheWayModdedNanogptReadsIt) {
  CT_NEED_PYTHON_MODULES("numpy", "system python3 lacks numpy");
  TempDir dir;
  std::vector<int32_t> tokens;
  for (int i = 0; i < 1000; ++i) tokens.push_back((i * 7919) % 65536);
  write_shard(dir / "s.bin", tokens, 1);
  std::string script = dir.path().string() + "/read.py";
  write_file_atomic(script,
                    "import sys, numpy as np\n"
                    "header = np.fromfile(sys.argv[1], dtype=np.int32, count=256)\n"
                    "assert header[0] == 20240520 and header[1] == 1, header[:3]\n"
                    "with open(sys.argv[1], 'rb') as f:\n"
                    "    f.seek(256 * 4)\n"
                    "    t = np.frombuffer(f.read(), dtype=np.uint16)\n"
                    "assert len(t) == header[2]\n"
                    "print(int(header[2]), int(t.astype(np.int64).sum()), int(t[-1]))\n");
  auto result = test::run_command(test::python() + " " + script + " " + (dir / "s.bin").string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  int64_t sum = 0;
  for (int32_t t : tokens) sum += t;
  EXPECT_EQ(result.output, std::to_string(tokens.size()) + " " + std::to_string(sum) + " " +
                               std::to_string(tokens.back()) + "\n");
}

}  // namespace
}  // namespace ct
