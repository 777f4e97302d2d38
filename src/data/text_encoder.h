#pragma once
// What data preparation needs from a tokenizer: thread-safe encoding, the <|bos|> id, the vocab
// size and an identity. text/Tokenizer provides it through tokenizer_encoder(); tests may pass a
// trivial encoder so that the pipeline can be checked without training a tokenizer.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ct {

class Tokenizer;

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  // Appends the ids of `text` to `out`; called from several threads at once.
  virtual void encode_append(std::string_view text, std::vector<int32_t>& out) const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual std::string sha256() const = 0;
};

// Wraps a tokenizer (which must outlive the encoder).
std::unique_ptr<TextEncoder> tokenizer_encoder(const Tokenizer& tokenizer);

}  // namespace ct
