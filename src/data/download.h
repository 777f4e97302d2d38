#pragma once
// Downloads data files over HTTP(S) into a folder (docs/data.md, "Downloading the real datasets"),
// with libcurl's multi interface: several transfers at once, a partial file resumed with a Range
// request, failed transfers retried with exponential backoff, a stalled one cut after a timeout.
//
// A file is fetched into NAME.partial and renamed to NAME only after its size matched what the
// server announced and its SHA-256 matched the expected one (when given): a name without .partial
// is always a complete, checked file. Each completed file is recorded in OUT/download-manifest.json
// (URL, size, SHA-256, time), rewritten atomically.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ct {

inline constexpr const char* kDownloadManifestName = "download-manifest.json";

struct DownloadItem {
  std::string url;
  std::string name;    // the file name in the output folder (no folders)
  std::string sha256;  // expected (lowercase hex); empty: not checked, only recorded
};

struct DownloadSettings {
  std::filesystem::path out_dir;
  int parallel = 4;              // transfers at once
  int attempts = 5;              // per file, the first included
  double backoff_seconds = 1.0;  // before the 2nd attempt; doubles for each later one
  double connect_timeout_seconds = 30;
  double stall_timeout_seconds = 60;  // a transfer with no byte for this long is cut (and retried)
  bool progress = true;
};

struct DownloadRecord {
  std::string url, name, sha256, fetched_at;  // fetched_at: UTC, ISO 8601
  uint64_t bytes = 0;
  bool skipped = false;  // already complete in the folder (same name, and its checksum matched if given)
};

// Fetches every item; returns one record per item, in item order. Every file that could be fetched
// is in place and in the manifest; if any failed, throws an Error listing each failure (URL and
// reason) after the others finished.
std::vector<DownloadRecord> download_files(const std::vector<DownloadItem>& items, const DownloadSettings& settings);

// The file name at the end of a URL's path ("https://h/a/shard_00001.parquet?x=1" -> "shard_00001.parquet").
std::string file_name_of_url(const std::string& url);

}  // namespace ct
