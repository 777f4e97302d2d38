// Encoding untrusted text (corpus documents are the input of `tokenizer encode` and `data prepare`):
// the pre-tokenizer and the BPE encoder on arbitrary bytes, invalid UTF-8 included. Invariants: the
// pre-tokenizer's chunks are non-empty and concatenate back to the input; every id is a mergeable
// token; decode(encode(x)) == x. Then the input's bytes read as int32 ids go to decode(), which must
// either decode them or refuse an id outside the vocabulary with a ct::Error.
#include <cstring>

#include "fuzz_support.h"
#include "text/bpe_trainer.h"
#include "text/pretokenizer.h"
#include "text/tokenizer.h"

namespace {

// A small tokenizer trained once per process on fixed text with a mix of scripts, digits and spaces.
const ct::Tokenizer& fuzz_tokenizer() {
  static const ct::Tokenizer tokenizer = [] {
    ct::BpeTrainerOptions options;
    options.vocab_size = 400;
    options.special_tokens = {"<|bos|>", "<|end|>"};
    options.threads = 1;
    ct::BpeTrainer trainer(options);
    const std::string sample =
        "The quick brown fox jumps over the lazy dog. It's 1234567 o'clock, isn't it?\n"
        "  indented line\twith tabs\r\n"
        "Caf\xc3\xa9 na\xc3\xafve \xc3\xa9t\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e "
        "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xf0\x9f\x98\x80!!! x = y + 42;\n";
    for (int i = 0; i < 50; ++i) trainer.add_document(sample + std::to_string(i * 7919));
    return trainer.train();
  }();
  return tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = ct::fuzz::as_text(data, size);
  const ct::Tokenizer& tokenizer = fuzz_tokenizer();
  // Any bytes are valid text: no exception of any type may escape here.
  {
    std::string joined;
    ct::pretokenize(text, [&](std::string_view chunk) {
      ct::fuzz::fuzz_require(!chunk.empty(), "pre-tokenizer chunks are not empty");
      joined.append(chunk);
    });
    ct::fuzz::fuzz_require(joined == text, "pre-tokenizer chunks concatenate to the input");

    const std::vector<int32_t> ids = tokenizer.encode(text);
    const int32_t bos = tokenizer.bos_id();
    for (int32_t id : ids) ct::fuzz::fuzz_require(id >= 0 && id < bos, "encode gives mergeable token ids");
    ct::fuzz::fuzz_require(tokenizer.decode(ids) == text, "decode(encode(text)) == text");
  }
  std::vector<int32_t> raw_ids(size / sizeof(int32_t));
  if (!raw_ids.empty()) std::memcpy(raw_ids.data(), data, raw_ids.size() * sizeof(int32_t));
  ct::fuzz::accept_only_ct_errors([&] { (void)tokenizer.decode(raw_ids); });
  return 0;
}
