#pragma once
// ct::Tokenizer as the evaluators' TextEncoder.
#include "eval/text_encoder.h"
#include "text/tokenizer.h"

namespace ct {

class TokenizerTextEncoder final : public TextEncoder {
 public:
  explicit TokenizerTextEncoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::vector<int32_t> encode(std::string_view text) const override { return tokenizer_.encode(text); }
  int32_t bos_id() const override { return tokenizer_.bos_id(); }

 private:
  const Tokenizer& tokenizer_;
};

}  // namespace ct
