#include "data/prepared_folder.h"

#include "text/tokenizer.h"
#include "util/data_dir.h"
#include "util/error.h"

namespace ct {

namespace fs = std::filesystem;

Manifest load_prepared_manifest(const fs::path& dir) {
  const fs::path path = dir / kManifestFileName;
  if (fs::exists(path)) return load_manifest(path);
  const std::string folder = dir.string();
  if (fs::is_directory(DataLayout{dir}.corpus()))
    fail(path.string(), ": missing: ", folder,
         " is a raw data folder (it holds corpus/), where a prepared data folder (manifest.json, the token shards "
         "and tokenizer/) is expected: make one from it with `clocktrain data prepare --data ",
         folder, " --out runs/data` and give runs/data instead, or let `clocktrain run` prepare and cache it");
  fail(path.string(), ": missing: ", folder,
       " is not a prepared data folder (make one with `clocktrain data prepare --out ", folder, "`)");
}

ShardFile open_listed_shard(const fs::path& path, const ShardRecord& record, const Manifest& manifest) {
  ShardFile shard = ShardFile::open(path);
  const uint64_t bytes = shard.file_bytes().size();
  check(bytes == record.bytes, path.string(), ": the file is ", bytes, " bytes, the manifest says ", record.bytes);
  check(shard.token_count() == record.tokens, path.string(), ": holds ", shard.token_count(),
        " tokens (header, byte 8), the manifest says ", record.tokens);
  check(shard.version() == manifest.shard_version, path.string(), ": version ", shard.version(),
        " (header, byte 4), the manifest says ", manifest.shard_version);
  return shard;
}

void check_shard_token_ids(const ShardFile& shard, const Manifest& manifest) {
  const int64_t bad = shard.first_token_at_or_above(manifest.vocab_size);
  if (bad < 0) return;
  fail(shard.path().string(), ": token ", bad, " (byte ",
       kShardHeaderBytes + static_cast<uint64_t>(bad) * shard.token_bytes(), ") is ", shard.token(bad),
       ", outside the vocabulary [0, ", manifest.vocab_size, ") of the manifest's tokenizer");
}

void verify_prepared_tokenizer(const fs::path& dir, const Manifest& manifest) {
  const fs::path folder = dir / "tokenizer";
  const Tokenizer tokenizer = Tokenizer::load(folder);
  const std::string sha256 = tokenizer.sha256();
  const std::string manifest_path = (dir / kManifestFileName).string();
  check(sha256 == manifest.tokenizer_sha256, folder.string(), ": the tokenizer's SHA-256 is ", sha256, ", but ",
        manifest_path, " says the shards were made by ", manifest.tokenizer_sha256,
        " (tokenizer.sha256): the tokenizer files changed after preparation");
  check(tokenizer.vocab_size() == manifest.vocab_size && tokenizer.bos_id() == manifest.bos_id, folder.string(),
        ": vocabulary ", tokenizer.vocab_size(), " with <|bos|> ", tokenizer.bos_id(), ", but ", manifest_path,
        " says ", manifest.vocab_size, " with ", manifest.bos_id);
}

void verify_prepared_folder(const fs::path& dir, const Manifest& pinned) {
  const Manifest manifest = load_prepared_manifest(dir);
  const std::string sha256 = manifest_sha256(manifest), pinned_sha256 = manifest_sha256(pinned);
  check(sha256 == pinned_sha256, (dir / kManifestFileName).string(), ": its content (sha256 ", sha256,
        ") differs from the manifest as prepared (sha256 ", pinned_sha256, ")");
  verify_prepared_tokenizer(dir, manifest);
  for (const auto& record : manifest.shards) open_listed_shard(dir / record.name, record, manifest);
}

}  // namespace ct
