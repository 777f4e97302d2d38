// Plain JSONL corpus files (and the same bytes as a .txt document): CorpusReader + parse_document.
#include "corpus_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = ct::fuzz::as_text(data, size);
  ct::fuzz::read_whole_corpus_file("corpus.jsonl", bytes);
  ct::fuzz::read_whole_corpus_file("document.txt", bytes);
  return 0;
}
