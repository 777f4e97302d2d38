// `data download` (data/download.h) against a loopback HTTP server that this test starts
// (tests/python/fault_http_server.py, the system python3): files arrive complete and checked, with
// their manifest; each fault the server injects (a connection cut mid-file, a length it announces
// and never sends, a Range it ignores, a bad checksum, a 404, a stall past the timeout) ends in a
// resumed download or a clear error, and never leaves a half-written file under its final name.
// Nothing is fetched from outside this machine.
#include <gmock/gmock.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "data/dataset_sources.h"
#include "data/download.h"
#include "data_test_support.h"
#include "util/sha256.h"

namespace ct {
namespace {

using ::testing::HasSubstr;
using test::TempDir;

class Download : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    served_ = new TempDir("served");
    // A 1 MB file of varied bytes (big enough to be cut mid-file), and Apache's Parquet test files.
    std::string big;
    for (int i = 0; i < (1 << 20); ++i) big.push_back(static_cast<char>((i * 2654435761u) >> 13));
    write_file_atomic(served_->path() / "big.bin", big);
    for (const char* name : {"delta_byte_array.parquet", "rle-dict-snappy-checksum.parquet"}) {
      fs::copy_file(test::data_dir() / "parquet-testing" / name, served_->path() / name);
    }
    const fs::path info = served_->path() / "server.info";
    std::string command = test::python() + " " + (test::source_dir() / "tests/python/fault_http_server.py").string() +
                          " " + served_->path().string() + " " + info.string() + " " +
                          (served_->path() / "requests.log").string() + " >/dev/null 2>&1 &";
    ASSERT_EQ(std::system(command.c_str()), 0);
    for (int i = 0; i < 200 && !fs::exists(info); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(info)) << "the test server did not start";
    std::istringstream(read_file(info)) >> port_ >> pid_;
  }
  static void TearDownTestSuite() {
    if (pid_ > 0) ::kill(pid_, SIGTERM);
    delete served_;
  }

  static std::string url(const std::string& mode, const std::string& name) {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + mode + "/" + name;
  }
  static std::string sha_of(const std::string& name) { return sha256_file(served_->path() / name); }
  static std::string requests() { return read_file(served_->path() / "requests.log"); }

  DownloadSettings settings(const fs::path& out) const {
    DownloadSettings s;
    s.out_dir = out;
    s.attempts = 3;
    s.backoff_seconds = 0.05;
    s.stall_timeout_seconds = 2;
    s.connect_timeout_seconds = 5;
    s.progress = false;
    return s;
  }

  // The folder holds exactly these names (no .partial, nothing else).
  static std::vector<std::string> names_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  static TempDir* served_;
  static int port_;
  static int pid_;
};

TempDir* Download::served_ = nullptr;
int Download::port_ = 0;
int Download::pid_ = 0;

TEST_F(Download, ParallelFilesArriveCheckedWithAManifest) {
  TempDir dir;
  std::vector<DownloadItem> items = {
      {url("ok", "big.bin"), "big.bin", sha_of("big.bin")},
      {url("ok", "delta_byte_array.parquet"), "delta_byte_array.parquet", ""},
      {url("ok", "rle-dict-snappy-checksum.parquet"), "rle-dict-snappy-checksum.parquet",
       sha_of("rle-dict-snappy-checksum.parquet")},
  };
  auto records = download_files(items, settings(dir.path()));
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_EQ(read_file(dir / r.name), read_file(served_->path() / r.name)) << r.name;
    EXPECT_EQ(r.sha256, sha_of(r.name));
    EXPECT_FALSE(r.skipped);
  }
  EXPECT_THAT(names_in(dir.path()), ::testing::ElementsAre("big.bin", "delta_byte_array.parquet", kDownloadManifestName,
                                                           "rle-dict-snappy-checksum.parquet"));
  const Json manifest = Json::parse(read_file(dir / kDownloadManifestName));
  ASSERT_EQ(manifest["files"].size(), 3u);
  for (const Json& entry : manifest["files"]) {
    const std::string name = entry["file"];
    EXPECT_EQ(entry["url"], url("ok", name));
    EXPECT_EQ(entry["bytes"], fs::file_size(served_->path() / name));
    EXPECT_EQ(entry["sha256"], sha_of(name));
    EXPECT_THAT(entry["fetched_at"].get<std::string>(), ::testing::MatchesRegex("20[0-9-]+T[0-9:]+Z"));
  }
  // A second run finds them complete and fetches nothing.
  const size_t requests_before = requests().size();
  records = download_files(items, settings(dir.path()));
  for (const auto& r : records) EXPECT_TRUE(r.skipped) << r.name;
  EXPECT_EQ(requests().size(), requests_before);
}

TEST_F(Download, AConnectionCutMidFileIsResumedWithARange) {
  TempDir dir;
  auto records = download_files({{url("cut", "big.bin"), "big.bin", sha_of("big.bin")}}, settings(dir.path()));
  EXPECT_EQ(read_file(dir / "big.bin"), read_file(served_->path() / "big.bin"));
  // The second request asked for the rest, from where the first stopped (half of 1 MiB).
  EXPECT_THAT(requests(), HasSubstr("/cut/big.bin bytes=524288-"));
  EXPECT_FALSE(fs::exists(dir / "big.bin.partial"));
}

TEST_F(Download, AServerIgnoringTheRangeRestartsTheFile) {
  TempDir dir;
  // A stale partial file of wrong bytes: libcurl refuses the 200 answer to its Range request, and
  // the next attempt starts the file over.
  write_file_atomic(dir / "big.bin.partial", std::string(1000, 'x'));
  download_files({{url("norange", "big.bin"), "big.bin", sha_of("big.bin")}}, settings(dir.path()));
  EXPECT_EQ(read_file(dir / "big.bin"), read_file(served_->path() / "big.bin"));
  EXPECT_THAT(requests(), HasSubstr("/norange/big.bin bytes=1000-"));
}

TEST_F(Download, FaultsThatDoNotHealAreClearErrorsAndLeaveNothingBehind) {
  struct Case {
    std::string mode, expected;
  };
  for (const Case& c : std::vector<Case>{{"cutalways", "transfer closed with 131072 bytes remaining to read (3 attempts)"},
                                         {"corrupt", "checksum mismatch: expected SHA-256 " + sha_of("big.bin")},
                                         {"404", "HTTP 404 (1 attempt)"},
                                         {"slow", "Operation too slow"}}) {
    SCOPED_TRACE(c.mode);
    TempDir dir(c.mode);
    write_file_atomic(dir / "keep.txt", "an earlier file");
    DownloadSettings s = settings(dir.path());
    if (c.mode == "slow") s.stall_timeout_seconds = 1;  // it stalls every attempt: 3 stalls of 1 s, not of 2
    std::string error =
        test::error_of([&] { download_files({{url(c.mode, "big.bin"), "big.bin", sha_of("big.bin")}}, s); });
    EXPECT_THAT(error, HasSubstr("1 of 1 file(s) failed"));
    EXPECT_THAT(error, HasSubstr(url(c.mode, "big.bin") + ": "));
    EXPECT_THAT(error, HasSubstr(c.expected));
    // Nothing half-written, and what was there is untouched.
    EXPECT_THAT(names_in(dir.path()), ::testing::ElementsAre("keep.txt"));
    EXPECT_EQ(read_file(dir / "keep.txt"), "an earlier file");
  }
}

TEST_F(Download, OneFailureDoesNotStopTheOthers) {
  TempDir dir;
  std::string error = test::error_of([&] {
    download_files({{url("404", "big.bin"), "big.bin", ""},
                    {url("ok", "delta_byte_array.parquet"), "delta_byte_array.parquet", ""}},
                   settings(dir.path()));
  });
  EXPECT_THAT(error, HasSubstr("1 of 2 file(s) failed"));
  EXPECT_EQ(read_file(dir / "delta_byte_array.parquet"), read_file(served_->path() / "delta_byte_array.parquet"));
  const Json manifest = Json::parse(read_file(dir / kDownloadManifestName));
  ASSERT_EQ(manifest["files"].size(), 1u);
  EXPECT_EQ(manifest["files"][0]["file"], "delta_byte_array.parquet");
}

TEST_F(Download, UrlListsAndNamedSources) {
  TempDir dir;
  write_file_atomic(dir / "urls.txt", "# a comment\n\n" + url("ok", "big.bin") + " " + sha_of("big.bin") + "\n" +
                                          url("ok", "delta_byte_array.parquet") + "\n");
  auto items = read_url_list(dir / "urls.txt");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].name, "big.bin");
  EXPECT_EQ(items[0].sha256, sha_of("big.bin"));
  EXPECT_EQ(items[1].sha256, "");
  write_file_atomic(dir / "bad.txt", url("ok", "a") + "\nftp://x/y\n");
  EXPECT_THAT(test::error_of([&] { read_url_list(dir / "bad.txt"); }),
              HasSubstr((dir / "bad.txt").string() + ":2: expected an http:// or https:// URL"));
  write_file_atomic(dir / "badsha.txt", url("ok", "a") + " abc\n");
  EXPECT_THAT(test::error_of([&] { read_url_list(dir / "badsha.txt"); }),
              HasSubstr(":1: expected a SHA-256 (64 lowercase hex digits)"));

  auto fineweb = dataset_items("fineweb-edu", 3);
  ASSERT_EQ(fineweb.size(), 3u);
  EXPECT_EQ(fineweb[2].url, "https://huggingface.co/datasets/karpathy/fineweb-edu-100b-shuffle/resolve/main/shard_00002.parquet");
  EXPECT_EQ(fineweb[2].name, "shard_00002.parquet");
  EXPECT_EQ(dataset_items("climbmix", 1)[0].url,
            "https://huggingface.co/datasets/karpathy/climbmix-400b-shuffle/resolve/main/shard_00000.parquet");
  EXPECT_THAT(test::error_of([] { dataset_items("fineweb-edu", 1824); }), HasSubstr("has 1823 shards"));
  EXPECT_THAT(test::error_of([] { dataset_items("nope", 1); }), HasSubstr("unknown source \"nope\""));
}

// The command end to end: a URL list (one file cut mid-way once, with a checksum) into a folder.
TEST_F(Download, CliDownloadsAUrlList) {
  TempDir dir;
  write_file_atomic(dir / "urls.txt", url("cut", "delta_byte_array.parquet") + " " +
                                          sha_of("delta_byte_array.parquet") + "\n" +
                                          url("ok", "rle-dict-snappy-checksum.parquet") + "\n");
  auto result = test::run_command(test::clocktrain_bin() + " data download " + (dir / "urls.txt").string() +
                                  " --out " + (dir / "data/corpus").string() + " --backoff 0.05");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("data download: 2 file(s) fetched, 0 already complete"));
  EXPECT_EQ(sha256_file(dir / "data/corpus/delta_byte_array.parquet"), sha_of("delta_byte_array.parquet"));
  auto missing = test::run_command(test::clocktrain_bin() + " data download fineweb-edu --out " + (dir / "x").string());
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.output, HasSubstr("--shards N is required"));
}

}  // namespace
}  // namespace ct
