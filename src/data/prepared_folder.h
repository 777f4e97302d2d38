#pragma once
// A prepared data folder (docs/data.md: manifest.json, the token shards, tokenizer/) checked against
// its manifest before anything is read from it or sized from it: every size the manifest claims is
// compared with what the file holds, and every token id with the manifest's vocabulary.
#include <filesystem>

#include "data/manifest.h"
#include "data/shard.h"

namespace ct {

// Maps the shard at `path` (the file `record` lists) and checks it against the manifest: the file's
// size against record.bytes, the header's token count against record.tokens and its version against
// manifest.shard_version. Reads the header only; errors name `path`.
ShardFile open_listed_shard(const std::filesystem::path& path, const ShardRecord& record, const Manifest& manifest);

// Every token id of the shard lies in [0, manifest.vocab_size); the error names the file, the index
// and byte offset of the first that does not, and the id. One pass over the mapped tokens.
void check_shard_token_ids(const ShardFile& shard, const Manifest& manifest);

}  // namespace ct
