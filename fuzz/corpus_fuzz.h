#pragma once
// The corpus targets: write the input under a corpus file name and read every document with the
// real reader (data/corpus_reader.h), as `data prepare` and `tokenizer train` do.
#include "data/corpus_reader.h"
#include "fuzz_support.h"

namespace ct::fuzz {

inline void read_whole_corpus_file(const std::string& file_name, std::string_view bytes) {
  const std::filesystem::path path = scratch().write(file_name, bytes);
  accept_only_ct_errors([&] {
    CorpusReader reader({path});
    Document doc;
    int64_t last_line = 0;
    while (reader.next(doc)) {
      fuzz_require(doc.line > last_line || doc.line == 0, "documents come in line order");
      last_line = doc.line;
      fuzz_require(doc.metadata.is_object(), "a document's metadata is an object");
    }
  });
}

}  // namespace ct::fuzz
