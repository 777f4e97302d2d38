// Writes the seed corpora under fuzz/corpus/<target>/ with clocktrain's own writers, so that every
// seed is a valid file of the current format (scripts/make-fuzz-seeds.sh runs it; the seeds are
// committed). Small on purpose: the fuzzers mutate them, and a small input runs fast.
//   make_fuzz_seeds OUT_DIR
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "text/bpe_trainer.h"
#include "text/tokenizer.h"
#include "util/error.h"
#include "util/files.h"

namespace fs = std::filesystem;

namespace {

fs::path out_root;

void write_seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = out_root / target;
  ct::ensure_directory(dir);
  ct::write_file_atomic(dir / name, bytes);
  std::printf("%-28s %-32s %7zu bytes\n", target.c_str(), name.c_str(), bytes.size());
}

// A tokenizer of 256 bytes + a few dozen merges: small files, every code path of loading.
ct::Tokenizer tiny_tokenizer() {
  ct::BpeTrainerOptions options;
  options.vocab_size = 300;
  options.special_tokens = {"<|bos|>", "<|end|>"};
  options.threads = 1;
  ct::BpeTrainer trainer(options);
  for (int i = 0; i < 20; ++i)
    trainer.add_document("the theory of the thing: there, then, these " + std::to_string(i * 37) +
                         " caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\n");
  return trainer.train();
}

// The two tokenizer files as saved, as the tokenizer targets take them.
struct TokenizerFiles {
  std::string tiktoken, json;
};

TokenizerFiles saved_files(const ct::Tokenizer& tokenizer, const fs::path& scratch) {
  tokenizer.save(scratch);
  return {ct::read_file(scratch / "tokenizer.tiktoken"), ct::read_file(scratch / "tokenizer.json")};
}

void text_seeds(const fs::path& scratch) {
  const TokenizerFiles files = saved_files(tiny_tokenizer(), scratch / "tokenizer");
  write_seed("tokenizer_files", "tiny_300.bin", files.tiktoken + std::string(1, '\0') + files.json);

  write_seed("tokenizer_encode", "ascii.txt", "Hello, world! It's 2024. I'll say: 'we've 12345 DON'T'.\n");
  write_seed("tokenizer_encode", "unicode.txt",
             "Caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xd0\x9f\xd1\x80\xd0\xb8 \xf0\x9f\x98\x80 "
             "\xc5\xbft \xe2\x80\xa8x\xc2\xa0y\xe3\x80\x80z \xd9\xa3\xd9\xa4 \xe2\x85\xab\n");
  write_seed("tokenizer_encode", "spaces.txt", "a  b\t\tc \n\n  \r\n\r\n   d   \n\x0b\x0c  e    ");
  write_seed("tokenizer_encode", "invalid_utf8.txt",
             "ok \xff\xfe \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82 end\x80");

  write_seed("json_text", "tokenizer.json", files.json);
  write_seed("json_text", "values.json",
             R"({"a": [1, -2.5e-3, 1e308, true, false, null], "s": "esc \" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00",)"
             R"( "nested": {"x": [[[]]], "y": {}}, "big": 18446744073709551615, "neg": -9223372036854775808})");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR (fuzz/corpus)\n", argv[0]);
    return 2;
  }
  out_root = argv[1];
  const fs::path scratch = fs::temp_directory_path() / ("clocktrain-seeds-" + std::to_string(::getpid()));
  try {
    text_seeds(scratch);
  } catch (const ct::Error& e) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
    fs::remove_all(scratch);
    return 1;
  }
  fs::remove_all(scratch);
  return 0;
}
