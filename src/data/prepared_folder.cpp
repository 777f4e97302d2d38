#include "data/prepared_folder.h"

#include "util/error.h"

namespace ct {

namespace fs = std::filesystem;

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

}  // namespace ct
