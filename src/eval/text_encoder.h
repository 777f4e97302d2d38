#pragma once
// What the CORE and bpb evaluators need from a tokenizer: ordinary text to ids, and the BOS id.
// ct::Tokenizer is adapted by TokenizerTextEncoder; tests plug in small hand-made encoders.
// encode() must be safe to call from several threads at once.
#include <cstdint>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace ct {

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  virtual int32_t bos_id() const = 0;
};

class TokenizerTextEncoder final : public TextEncoder {
 public:
  explicit TokenizerTextEncoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::vector<int32_t> encode(std::string_view text) const override { return tokenizer_.encode(text); }
  int32_t bos_id() const override { return tokenizer_.bos_id(); }

 private:
  const Tokenizer& tokenizer_;
};

}  // namespace ct
