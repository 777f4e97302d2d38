#include "data/dataset_sources.h"

#include <cstdio>
#include <set>

#include "util/error.h"
#include "util/files.h"

namespace ct {

namespace {

// A dataset published as shard_{index:05d}.parquet under one URL.
struct ShardedDataset {
  const char* name;
  const char* base_url;
  int64_t shards;  // shard_00000 .. shard_{shards-1}
};

// docs/data.md, "Downloading the real datasets", says where each pattern was found.
constexpr ShardedDataset kDatasets[] = {
    {"fineweb-edu", "https://huggingface.co/datasets/karpathy/fineweb-edu-100b-shuffle/resolve/main", 1823},
    {"climbmix", "https://huggingface.co/datasets/karpathy/climbmix-400b-shuffle/resolve/main", 6543},
};

bool is_hex_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> dataset_names() {
  std::vector<std::string> names;
  for (const auto& d : kDatasets) names.emplace_back(d.name);
  return names;
}

std::vector<DownloadItem> dataset_items(const std::string& source, int64_t count) {
  for (const auto& d : kDatasets) {
    if (source != d.name) continue;
    check(count >= 1 && count <= d.shards, "--shards: ", source, " has ", d.shards, " shards (0 .. ", d.shards - 1,
          "), got ", count);
    std::vector<DownloadItem> items;
    for (int64_t i = 0; i < count; ++i) {
      char name[48];
      std::snprintf(name, sizeof(name), "shard_%05lld.parquet", static_cast<long long>(i));
      items.push_back({std::string(d.base_url) + "/" + name, name, ""});
    }
    return items;
  }
  std::string known;
  for (const auto& name : dataset_names()) known += name + ", ";
  fail("data download: unknown source \"", source, "\" (known: ", known, "or a file listing URLs)");
}

std::vector<DownloadItem> read_url_list(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  std::vector<DownloadItem> items;
  std::set<std::string> names;
  size_t begin = 0;
  for (int64_t line_number = 1; begin < text.size(); ++line_number) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t url_end = line.find_first_of(" \t", first);
    DownloadItem item;
    item.url = line.substr(first, url_end == std::string::npos ? std::string::npos : url_end - first);
    const std::string where = str(path.string(), ":", line_number);
    check(item.url.rfind("http://", 0) == 0 || item.url.rfind("https://", 0) == 0, where,
          ": expected an http:// or https:// URL, got \"", item.url, "\"");
    if (url_end != std::string::npos) {
      const size_t sha_begin = line.find_first_not_of(" \t", url_end);
      if (sha_begin != std::string::npos) {
        const size_t sha_end = line.find_first_of(" \t", sha_begin);
        item.sha256 = line.substr(sha_begin, sha_end == std::string::npos ? std::string::npos : sha_end - sha_begin);
        check(is_hex_sha256(item.sha256), where, ": expected a SHA-256 (64 lowercase hex digits) after the URL, got \"",
              item.sha256, "\"");
        check(sha_end == std::string::npos || line.find_first_not_of(" \t", sha_end) == std::string::npos, where,
              ": expected \"URL [SHA256]\", got more");
      }
    }
    item.name = file_name_of_url(item.url);
    check(!item.name.empty(), where, ": the URL names no file (it ends with '/')");
    check(names.insert(item.name).second, where, ": a second URL for the file name ", item.name);
    items.push_back(std::move(item));
  }
  check(!items.empty(), path.string(), ": no URLs");
  return items;
}

}  // namespace ct
