#pragma once
// A trained byte-level BPE tokenizer (docs/formats.md): the split pattern, the merges (ranks 256...),
// and the special tokens after them (<|bos|> first). Encoding is deterministic and thread-safe.
//
// On disk (a folder): tokenizer.tiktoken (`<base64 token bytes> <rank>` per line, ranks 0..n-1 for
// the byte tokens and merges) and tokenizer_clocktrain.json (pattern, special tokens and their ids,
// vocab size), so Python's tiktoken can load it unchanged.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ct {

// The folder's two files. The JSON file is clocktrain's own, so it is not named tokenizer.json, the
// name of Hugging Face tokenizers' file (whose loader fails on it); folders written before the rename
// hold kTokenizerJsonFileBefore, which every reader still takes (tokenizer_json_path).
inline constexpr const char* kTokenizerTiktokenFile = "tokenizer.tiktoken";
inline constexpr const char* kTokenizerJsonFile = "tokenizer_clocktrain.json";
inline constexpr const char* kTokenizerJsonFileBefore = "tokenizer.json";
// The JSON file of the tokenizer folder `dir`: kTokenizerJsonFile, or the old name where only that
// exists (the new name where neither does, for the message of a missing file).
std::filesystem::path tokenizer_json_path(const std::filesystem::path& dir);

class Tokenizer {
 public:
  // Loads tokenizer.tiktoken + tokenizer_clocktrain.json (or tokenizer.json) from a folder. Errors name the file and line.
  static Tokenizer load(const std::filesystem::path& dir);
  // The same from the two files' contents (load() reads the files and calls this); errors name
  // `tiktoken_name` or `json_name` and the line or field.
  static Tokenizer from_file_contents(std::string_view tiktoken_text, std::string_view json_text,
                                      const std::string& tiktoken_name, const std::string& json_name);
  // Writes both files atomically into the folder.
  void save(const std::filesystem::path& dir) const;

  // Ordinary text to ids (special-token strings in the text are encoded as ordinary text).
  std::vector<int32_t> encode(std::string_view text) const;
  // Appends to `out` (avoids allocation in hot loops).
  void encode_append(std::string_view text, std::vector<int32_t>& out) const;
  // Ids back to bytes; special ids decode to their names (e.g. "<|bos|>").
  std::string decode(const std::vector<int32_t>& ids) const;
  // The bytes of one id (empty for specials).
  std::string token_bytes_of(int32_t id) const;

  int32_t vocab_size() const;  // merges + 256 + specials
  int32_t bos_id() const;      // the id of <|bos|>
  int32_t special_id(std::string_view name) const;  // -1 when absent
  // UTF-8 byte count of every id's decoding, 0 for special tokens (docs/eval.md's token_bytes).
  std::vector<int32_t> token_bytes() const;
  // SHA-256 of the two files' canonical contents, identifying the tokenizer in manifests.
  std::string sha256() const;

  Tokenizer();
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class BpeTrainer;
};

}  // namespace ct
