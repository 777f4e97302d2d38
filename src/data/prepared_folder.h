#pragma once
// A prepared data folder (docs/data.md: manifest.json, the token shards, tokenizer/) checked against
// its manifest before anything is read from it or sized from it: every size the manifest claims is
// compared with what the file holds, the tokenizer with the manifest's hash of it, and every token
// id with the manifest's vocabulary.
#include <filesystem>

#include "data/manifest.h"
#include "data/shard.h"

namespace ct {

// <dir>/manifest.json. When it is missing the error says what a prepared folder is and how to make
// one, from `dir` itself when `dir` is a raw data folder (one that holds corpus/).
Manifest load_prepared_manifest(const std::filesystem::path& dir);

// Maps the shard at `path` (the file `record` lists) and checks it against the manifest: the file's
// size against record.bytes, the header's token count against record.tokens and its version against
// manifest.shard_version. Reads the header only; errors name `path`.
ShardFile open_listed_shard(const std::filesystem::path& path, const ShardRecord& record, const Manifest& manifest);

// Every token id of the shard lies in [0, manifest.vocab_size); the error names the file, the index
// and byte offset of the first that does not, and the id. One pass over the mapped tokens.
void check_shard_token_ids(const ShardFile& shard, const Manifest& manifest);

// <dir>/tokenizer/ (tokenizer.tiktoken, tokenizer_clocktrain.json) is the tokenizer that made the shards: its
// SHA-256 (Tokenizer::sha256, of the canonical text, as prepare records it), vocabulary size and
// <|bos|> id equal the manifest's.
void verify_prepared_tokenizer(const std::filesystem::path& dir, const Manifest& manifest);

// For reusing a folder prepared earlier (clocktrain run's cache): <dir>/manifest.json holds
// `pinned` (the same canonical SHA-256), the tokenizer matches it, and every shard it lists has the
// listed size and a header with the listed token count and version. The shards' SHA-256 and ids are
// left to the loader, which checks the ids of its split when it is made and each shard's SHA-256
// when it first reads it; here only headers are read, so the check takes milliseconds.
void verify_prepared_folder(const std::filesystem::path& dir, const Manifest& pinned);

}  // namespace ct
