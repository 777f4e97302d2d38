#pragma once
// What the CORE and bpb evaluators need from a tokenizer: ordinary text to ids, and the BOS id.
// ct::Tokenizer is adapted by TokenizerTextEncoder (eval/tokenizer_text_encoder.h); tests plug in
// small hand-made encoders.
// encode() must be safe to call from several threads at once.
#include <cstdint>
#include <string_view>
#include <vector>

namespace ct {

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  virtual int32_t bos_id() const = 0;
};


}  // namespace ct
