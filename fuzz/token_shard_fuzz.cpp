// Token shards (llm.c layout): ShardFile::open maps and validates the header, then every token is
// read through both accessors, which must agree, and scanned for the first id at or above a limit.
#include <vector>

#include "data/shard.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ct::fuzz::scratch().write("shard.bin", ct::fuzz::as_text(data, size));
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::ShardFile shard = ct::ShardFile::open(path);
    ct::fuzz::fuzz_require(shard.file_bytes().size() == size, "the mapping is the whole file");
    ct::fuzz::fuzz_require(
        ct::kShardHeaderBytes + static_cast<uint64_t>(shard.token_count()) * shard.token_bytes() == size,
        "header + count * token size == file size");
    std::vector<int32_t> tokens(static_cast<size_t>(shard.token_count()));
    if (!tokens.empty()) shard.copy_tokens(0, shard.token_count(), tokens.data());
    for (int64_t i = 0; i < shard.token_count(); ++i)
      ct::fuzz::fuzz_require(shard.token(i) == tokens[static_cast<size_t>(i)], "token(i) == copy_tokens()[i]");
    // The vocabulary check's scan, with a limit taken from the input: every id before the index it
    // returns is below the limit, and the id there is not. Ids compare as the file's unsigned words.
    auto id = [&](int64_t i) { return static_cast<int64_t>(static_cast<uint32_t>(tokens[static_cast<size_t>(i)])); };
    const int64_t limit = tokens.empty() ? 0 : id(shard.token_count() / 2);
    const int64_t first = shard.first_token_at_or_above(limit);
    ct::fuzz::fuzz_require(first >= -1 && first < shard.token_count(), "first_token_at_or_above is -1 or an index");
    for (int64_t i = 0; i < (first < 0 ? shard.token_count() : first); ++i)
      ct::fuzz::fuzz_require(id(i) < limit, "no id before first_token_at_or_above reaches the limit");
    if (first >= 0) ct::fuzz::fuzz_require(id(first) >= limit, "the id at first_token_at_or_above reaches the limit");
  });
  // Reading past the end must be refused.
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::ShardFile shard = ct::ShardFile::open(path);
    int32_t one = 0;
    shard.copy_tokens(shard.token_count(), 1, &one);
    ct::fuzz::fuzz_require(false, "copy_tokens past the end is refused");
  });
  return 0;
}
