#pragma once
// One small tokenizer per test process: vocab 1024 (two special tokens) trained on ~400 KB of
// synthetic text, which takes a fraction of a second.
#include "text/bpe_trainer.h"
#include "text/synthetic_text.h"
#include "text/tokenizer.h"

namespace ct::test {

inline const Tokenizer& small_tokenizer() {
  static const Tokenizer tokenizer = [] {
    BpeTrainerOptions options;
    options.vocab_size = 1024;
    options.special_tokens = {"<|bos|>", "<|end|>"};
    BpeTrainer trainer(options);
    for (const auto& doc : synthetic_corpus(11, 40, 10000)) trainer.add_document(doc);
    return trainer.train();
  }();
  return tokenizer;
}

}  // namespace ct::test
