#include "data/text_encoder.h"
#include "text/tokenizer.h"

namespace ct {

namespace {

class TokenizerEncoder : public TextEncoder {
 public:
  explicit TokenizerEncoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer), sha256_(tokenizer.sha256()) {}
  void encode_append(std::string_view text, std::vector<int32_t>& out) const override {
    tokenizer_.encode_append(text, out);
  }
  int32_t bos_id() const override { return tokenizer_.bos_id(); }
  int64_t vocab_size() const override { return tokenizer_.vocab_size(); }
  std::string sha256() const override { return sha256_; }

 private:
  const Tokenizer& tokenizer_;
  std::string sha256_;
};

}  // namespace

std::unique_ptr<TextEncoder> tokenizer_encoder(const Tokenizer& tokenizer) {
  return std::make_unique<TokenizerEncoder>(tokenizer);
}

}  // namespace ct
