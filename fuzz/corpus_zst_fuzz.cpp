// zstd-compressed JSONL corpus files (.jsonl.zst): the streaming decompressor, then the JSONL reader.
#include "corpus_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::read_whole_corpus_file("corpus.jsonl.zst", ct::fuzz::as_text(data, size));
  return 0;
}
