#include "data/corpus_documents.h"

#include <algorithm>
#include <exception>

#include "data/corpus_reader.h"

namespace ct {

int64_t read_corpus_documents(const std::vector<std::filesystem::path>& files, const std::string& text_column,
                              int threads, const std::function<bool(std::string_view)>& on_document,
                              const std::function<void(const CorpusProgress&)>& on_batch) {
  CorpusReader reader(files, text_column);
  CorpusProgress progress;
  size_t batch_limit = size_t{1} << 20;
  std::vector<RawDocument> batch;
  bool more = true;
  while (more) {
    batch.clear();
    size_t bytes = 0;
    RawDocument raw;
    while (bytes < batch_limit && reader.next(raw)) {
      bytes += raw.payload.size();
      batch.push_back(std::move(raw));
      raw = RawDocument{};
    }
    if (batch.empty()) break;
    batch_limit = std::min(batch_limit * 2, size_t{32} << 20);
    // Parsing costs more than reading: it runs on every thread, and nothing may leave the loop.
    std::vector<Document> docs(batch.size());
    std::vector<std::exception_ptr> errors(batch.size());
#pragma omp parallel for num_threads(std::max(threads, 1)) schedule(dynamic, 1)
    for (size_t i = 0; i < batch.size(); ++i) {
      try {
        docs[i] = parse_document(std::move(batch[i]));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
    for (size_t i = 0; i < docs.size() && more; ++i) {
      if (errors[i]) std::rethrow_exception(errors[i]);
      ++progress.documents;
      more = on_document(docs[i].text);
    }
    progress.bytes_read = reader.bytes_read();
    if (on_batch) on_batch(progress);
  }
  return progress.documents;
}

}  // namespace ct
