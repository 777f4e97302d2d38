// Tokenizer files (tokenizer.tiktoken + tokenizer.json), through Tokenizer::from_file_contents, the
// entry point that Tokenizer::load uses. Input: the tiktoken text, a NUL byte, the JSON text.
// A tokenizer that loads must then work: encoding ordinary text and decoding it gives it back.
#include "fuzz_support.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto files = ct::fuzz::split_at_nul(ct::fuzz::as_text(data, size));
  const std::string_view tiktoken_text = files.first, json_text = files.second;
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::Tokenizer tokenizer =
        ct::Tokenizer::from_file_contents(tiktoken_text, json_text, "tokenizer.tiktoken", "tokenizer.json");
    const std::string text = "Hello world, it's 2024! Caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac  \n\tx\xff";
    const std::vector<int32_t> ids = tokenizer.encode(text);
    ct::fuzz::fuzz_require(tokenizer.decode(ids) == text, "decode(encode(text)) == text");
    const std::vector<int32_t> token_bytes = tokenizer.token_bytes();
    ct::fuzz::fuzz_require(static_cast<int32_t>(token_bytes.size()) == tokenizer.vocab_size(),
                           "token_bytes has one entry per id");
    ct::fuzz::fuzz_require(tokenizer.bos_id() >= 0 && tokenizer.bos_id() < tokenizer.vocab_size(),
                           "<|bos|> is in the vocabulary");
    (void)tokenizer.sha256();
  });
  return 0;
}
