#pragma once
// The training documents for the tokenizer: the "text" field of every line of the JSONL files in the
// data folder's corpus/ (*.jsonl.zst or *.jsonl, in file-name order), and the text column of every
// row of its *.parquet files (data/parquet_reader.h). Never val/ or eval_bundle/.
//
// A small reader of its own (libzstd streaming + nlohmann JSON) so that the text library stays free
// of file formats: BpeTrainer only takes documents as string_views.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ct::cli {

// The corpus files under `corpus_dir`, sorted by name. Errors if there are none.
std::vector<std::filesystem::path> training_corpus_files(const std::filesystem::path& corpus_dir);

// Calls on_document(text) for each document in order until it returns false. Errors name the file
// and line. JSON is parsed on `threads` threads, in batches. Returns the number of documents read.
// `text_column`: the text column of Parquet files.
int64_t read_training_documents(const std::vector<std::filesystem::path>& files, int threads,
                                const std::function<bool(std::string_view)>& on_document,
                                const std::string& text_column = "text");

}  // namespace ct::cli
