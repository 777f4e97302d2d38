#pragma once
// Trains a tokenizer on the documents of corpus files (corpus_reader.h: JSONL plain/.zst/.gz, .txt
// or Parquet), in corpus order (read by corpus_documents.h, as `clocktrain tokenizer train` reads
// them), with text/BpeTrainer. `clocktrain data prepare` uses it when no tokenizer
// exists yet, so that one command takes a fresh checkout from text to shards.
#include <filesystem>
#include <string>
#include <vector>

#include "text/bpe_trainer.h"
#include "text/tokenizer.h"

namespace ct {

// `report` (may be empty) receives progress lines; `text_column` is the text column of Parquet files.
Tokenizer train_tokenizer_on_corpus(const std::vector<std::filesystem::path>& files, const BpeTrainerOptions& options,
                                    const std::function<void(const std::string&)>& report = nullptr,
                                    const std::string& text_column = "text");

}  // namespace ct
