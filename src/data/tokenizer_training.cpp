#include "data/tokenizer_training.h"

#include "data/corpus_documents.h"
#include "util/error.h"
#include "util/threads.h"

namespace ct {

Tokenizer train_tokenizer_on_corpus(const std::vector<std::filesystem::path>& files, const BpeTrainerOptions& options,
                                    const std::function<void(const std::string&)>& report,
                                    const std::string& text_column) {
  BpeTrainer trainer(options);
  const int threads = options.threads > 0 ? options.threads : available_cores();
  read_corpus_documents(
      files, text_column, threads, [&](std::string_view text) { return trainer.add_document(text); },
      [&](const CorpusProgress& progress) {
        if (report) report(str("tokenizer: read ", progress.documents, " documents, ", progress.bytes_read / 1000000, " MB"));
      });
  check(trainer.stats().documents > 0, "tokenizer training: no documents in ", files.size(), " corpus file(s)");
  return trainer.train([&](int32_t done, int32_t total) {
    if (report) report(str("tokenizer: merge ", done, "/", total));
  });
}

}  // namespace ct
