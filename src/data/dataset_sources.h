#pragma once
// The datasets `clocktrain data download` knows by name, as lists of URLs (docs/data.md,
// "Downloading the real datasets", says where each pattern comes from), and URL-list files.
#include <filesystem>
#include <string>
#include <vector>

#include "data/download.h"

namespace ct {

// "fineweb-edu": nanochat's FineWeb-Edu shards (karpathy/fineweb-edu-100b-shuffle, shard_00000 ..
// shard_01822); "climbmix": NVIDIA's Nemotron-ClimbMix Parquet parts. Shards 0 .. count-1, in order.
// Errors for an unknown name or a count beyond the dataset's.
std::vector<DownloadItem> dataset_items(const std::string& source, int64_t count);

// The names dataset_items() knows, for messages.
std::vector<std::string> dataset_names();

// A URL list: one "URL [SHA256]" per line; blank lines and lines starting with '#' are skipped.
// Errors name the file and line (a line that is not an http(s) URL, a malformed checksum, two URLs
// with the same file name).
std::vector<DownloadItem> read_url_list(const std::filesystem::path& path);

}  // namespace ct
