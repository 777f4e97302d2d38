#include "data/tokenizer_training.h"

#include <exception>

#include "data/corpus_reader.h"
#include "util/error.h"
#include "util/threads.h"

namespace ct {

Tokenizer train_tokenizer_on_corpus(const std::vector<std::filesystem::path>& files, const BpeTrainerOptions& options,
                                    const std::function<void(const std::string&)>& report,
                                    const std::string& text_column) {
  BpeTrainer trainer(options);
  CorpusReader reader(files, text_column);
  const int threads = options.threads > 0 ? options.threads : available_cores();
  // JSON parsing runs in parallel over batches of raw documents; the trainer gets them in order.
  constexpr size_t kBatchBytes = 16 << 20;
  std::vector<RawDocument> batch;
  bool more = true;
  while (more) {
    batch.clear();
    size_t bytes = 0;
    RawDocument raw;
    while (bytes < kBatchBytes && reader.next(raw)) {
      bytes += raw.payload.size();
      batch.push_back(std::move(raw));
      raw = RawDocument{};
    }
    if (batch.empty()) break;
    std::vector<Document> docs(batch.size());
    std::vector<std::exception_ptr> errors(batch.size());
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (size_t i = 0; i < batch.size(); ++i) {
      try {
        docs[i] = parse_document(std::move(batch[i]));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
    for (size_t i = 0; i < docs.size() && more; ++i) {
      if (errors[i]) std::rethrow_exception(errors[i]);
      more = trainer.add_document(docs[i].text);
    }
    if (report) {
      report(str("tokenizer: read ", trainer.stats().documents, " documents, ", reader.bytes_read() / 1000000,
                 " MB"));
    }
  }
  check(trainer.stats().documents > 0, "tokenizer training: no documents in ", files.size(), " corpus file(s)");
  return trainer.train([&](int32_t done, int32_t total) {
    if (report) report(str("tokenizer: merge ", done, "/", total));
  });
}

}  // namespace ct
