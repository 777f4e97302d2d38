#pragma once
// The manifest of a prepared data folder (manifest.json beside the shards): which tokenizer made
// the tokens, with which settings, from which source files, and every shard's name, split, token
// and document counts and SHA-256. The loader opens only shards listed here and checks their hashes;
// result.json records manifest_sha256 as the run's data provenance.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "util/json.h"

namespace ct {

inline constexpr const char* kManifestFormat = "clocktrain-manifest";
inline constexpr int kManifestVersion = 1;
inline constexpr const char* kManifestFileName = "manifest.json";

// The three splits: training shards, the held-out slice of the training corpus (the trainer's
// periodic loss), and the pinned validation documents (the evaluator's only).
bool is_known_split(const std::string& split);

struct ShardRecord {
  std::string name;   // a file name inside the manifest's folder
  std::string split;  // "train", "heldout" or "val"
  int64_t tokens = 0;
  int64_t documents = 0;  // documents whose <|bos|> lies in this shard
  uint64_t bytes = 0;     // file size, header included
  std::string sha256;     // of the whole file
};

struct SourceRecord {
  std::string path;   // relative to the data folder, e.g. "corpus/train_000.jsonl.zst"
  std::string split;  // "train" (the training corpus, held-out slice included) or "val"
  uint64_t bytes = 0; // size on disk
  std::string sha256; // of the file on disk
};

struct Manifest {
  int version = kManifestVersion;
  std::string tokenizer_sha256;
  int64_t vocab_size = 0;
  int32_t bos_id = -1;
  int shard_version = 1;          // 1: uint16 tokens, 2: uint32 tokens
  Json settings = Json::object(); // the preparation settings, for the record
  Json summary = Json::object();  // what preparation found (documents, text bytes per split, ...)
  std::vector<SourceRecord> sources;
  std::vector<ShardRecord> shards;

  // The shards of one split, in manifest order.
  std::vector<ShardRecord> shards_of(const std::string& split) const;
  int64_t tokens_of(const std::string& split) const;
  int64_t documents_of(const std::string& split) const;
};

Json to_json(const Manifest& manifest);
// `where` names the source in errors (usually the file path).
Manifest manifest_from_json(const Json& json, const std::string& where);

// Loads <dir>/manifest.json (or the file itself when given one); errors name the file and field.
Manifest load_manifest(const std::filesystem::path& dir_or_file);
// Writes it atomically as indented JSON.
void save_manifest(const Manifest& manifest, const std::filesystem::path& path);

// SHA-256 of the manifest's canonical content (compact JSON, keys sorted): independent of the
// file's whitespace, so it identifies the data a run used (result.json: data.manifest_sha256).
std::string manifest_sha256(const Manifest& manifest);
std::string manifest_file_sha256(const std::filesystem::path& dir_or_file);

}  // namespace ct
