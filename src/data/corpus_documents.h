#pragma once
// The one reader of a corpus's documents as text, in corpus order: `clocktrain tokenizer train` and
// the tokenizer training of `clocktrain data prepare` (tokenizer_training.h) both read through it,
// so the same folder gives them the same documents (every format corpus_reader.h reads: JSONL plain,
// .zst or .gz, .txt files as one document each, Parquet rows).
//
// JSON lines are parsed on `threads` threads, in batches that start at 1 MB and double up to 32 MB,
// so a caller that stops early (--max-chars) parses little more than it uses; the texts reach
// on_document in order, and the first error in corpus order is the one thrown (naming file and line).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ct {

struct CorpusProgress {
  int64_t documents = 0;    // handed to on_document so far
  uint64_t bytes_read = 0;  // uncompressed bytes read so far (CorpusReader::bytes_read)
};

// Calls on_document(text) for each document until it returns false; after each batch, on_batch (may
// be empty) gets the progress. Returns the number of documents handed over. `text_column`: the text
// column of Parquet files.
int64_t read_corpus_documents(const std::vector<std::filesystem::path>& files, const std::string& text_column,
                              int threads, const std::function<bool(std::string_view)>& on_document,
                              const std::function<void(const CorpusProgress&)>& on_batch = nullptr);

}  // namespace ct
