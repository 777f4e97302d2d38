#include "data/manifest.h"

#include <set>

#include "util/error.h"
#include "util/files.h"
#include "util/sha256.h"

namespace ct {

bool is_known_split(const std::string& split) { return split == "train" || split == "heldout" || split == "val"; }

std::vector<ShardRecord> Manifest::shards_of(const std::string& split) const {
  std::vector<ShardRecord> out;
  for (const auto& shard : shards) {
    if (shard.split == split) out.push_back(shard);
  }
  return out;
}

int64_t Manifest::tokens_of(const std::string& split) const {
  int64_t total = 0;
  for (const auto& shard : shards) total += shard.split == split ? shard.tokens : 0;
  return total;
}

int64_t Manifest::documents_of(const std::string& split) const {
  int64_t total = 0;
  for (const auto& shard : shards) total += shard.split == split ? shard.documents : 0;
  return total;
}

Json to_json(const Manifest& manifest) {
  Json shards = Json::array();
  for (const auto& s : manifest.shards) {
    shards.push_back({{"name", s.name},
                      {"split", s.split},
                      {"tokens", s.tokens},
                      {"documents", s.documents},
                      {"bytes", s.bytes},
                      {"sha256", s.sha256}});
  }
  Json sources = Json::array();
  for (const auto& s : manifest.sources) {
    sources.push_back({{"path", s.path}, {"split", s.split}, {"bytes", s.bytes}, {"sha256", s.sha256}});
  }
  return Json{{"format", kManifestFormat},
              {"version", manifest.version},
              {"tokenizer", {{"sha256", manifest.tokenizer_sha256},
                             {"vocab_size", manifest.vocab_size},
                             {"bos_id", manifest.bos_id}}},
              {"shard_version", manifest.shard_version},
              {"settings", manifest.settings},
              {"summary", manifest.summary},
              {"sources", sources},
              {"shards", shards}};
}

namespace {

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A shard name must be a plain file name in the manifest's folder: the loader opens nothing else.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

Manifest manifest_from_json(const Json& json, const std::string& where) {
  check(json.is_object(), where, ": expected a JSON object");
  std::string format = json_field<std::string>(json, "format", where);
  check(format == kManifestFormat, where, ": field 'format': expected \"", kManifestFormat, "\", got \"", format,
        "\"");
  Manifest m;
  m.version = json_field<int>(json, "version", where);
  check(m.version == kManifestVersion, where, ": field 'version': this build reads version ", kManifestVersion,
        ", got ", m.version);
  const Json tokenizer = json_field<Json>(json, "tokenizer", where);
  const std::string tokenizer_where = where + ": tokenizer";
  m.tokenizer_sha256 = json_field<std::string>(tokenizer, "sha256", tokenizer_where);
  m.vocab_size = json_field<int64_t>(tokenizer, "vocab_size", tokenizer_where);
  m.bos_id = json_field<int32_t>(tokenizer, "bos_id", tokenizer_where);
  check(m.vocab_size > 0, tokenizer_where, ": field 'vocab_size': expected a positive number");
  m.shard_version = json_field<int>(json, "shard_version", where);
  check(m.shard_version == 1 || m.shard_version == 2, where, ": field 'shard_version': expected 1 or 2, got ",
        m.shard_version);
  m.settings = json_field_or<Json>(json, "settings", Json::object(), where);
  m.summary = json_field_or<Json>(json, "summary", Json::object(), where);

  const Json sources = json_field_or<Json>(json, "sources", Json::array(), where);
  check(sources.is_array(), where, ": field 'sources': expected an array");
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string w = str(where, ": sources[", i, "]");
    SourceRecord s;
    s.path = json_field<std::string>(sources[i], "path", w);
    s.split = json_field<std::string>(sources[i], "split", w);
    s.bytes = json_field<uint64_t>(sources[i], "bytes", w);
    s.sha256 = json_field<std::string>(sources[i], "sha256", w);
    m.sources.push_back(std::move(s));
  }

  const Json shards = json_field<Json>(json, "shards", where);
  check(shards.is_array(), where, ": field 'shards': expected an array");
  std::set<std::string> names;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string w = str(where, ": shards[", i, "]");
    ShardRecord s;
    s.name = json_field<std::string>(shards[i], "name", w);
    check(is_plain_file_name(s.name), w, ": field 'name': expected a file name inside the folder, got \"", s.name,
          "\"");
    check(names.insert(s.name).second, w, ": shard \"", s.name, "\" is listed twice");
    s.split = json_field<std::string>(shards[i], "split", w);
    check(is_known_split(s.split), w, ": field 'split': expected train, heldout or val, got \"", s.split, "\"");
    s.tokens = json_field<int64_t>(shards[i], "tokens", w);
    check(s.tokens >= 0, w, ": field 'tokens': expected a count >= 0, got ", s.tokens);
    s.documents = json_field<int64_t>(shards[i], "documents", w);
    s.bytes = json_field<uint64_t>(shards[i], "bytes", w);
    s.sha256 = json_field<std::string>(shards[i], "sha256", w);
    check(is_sha256_hex(s.sha256), w, ": field 'sha256': expected 64 lowercase hex digits");
    m.shards.push_back(std::move(s));
  }
  return m;
}

namespace {
std::filesystem::path manifest_path(const std::filesystem::path& dir_or_file) {
  return std::filesystem::is_directory(dir_or_file) ? dir_or_file / kManifestFileName : dir_or_file;
}
}  // namespace

Manifest load_manifest(const std::filesystem::path& dir_or_file) {
  auto path = manifest_path(dir_or_file);
  check(std::filesystem::exists(path), path.string(),
        ": no manifest (prepare the data first: clocktrain data prepare --out DIR)");
  return manifest_from_json(read_json_file(path), path.string());
}

void save_manifest(const Manifest& manifest, const std::filesystem::path& path) {
  write_file_atomic(path, to_json(manifest).dump(2) + "\n");
}

std::string manifest_sha256(const Manifest& manifest) { return sha256_hex(to_json(manifest).dump()); }

std::string manifest_file_sha256(const std::filesystem::path& dir_or_file) {
  return manifest_sha256(load_manifest(dir_or_file));
}

}  // namespace ct
