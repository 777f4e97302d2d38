// The tokenizer folder: tokenizer.tiktoken (`<base64 bytes> <rank>` per line, ranks 0, 1, 2, ...)
// and tokenizer_clocktrain.json (pattern, special tokens with ids, vocab size). Loading checks everything and
// names the file and line of the first problem.
#include <charconv>

#include "text/base64.h"
#include "text/pretokenizer.h"
#include "text/tokenizer.h"
#include "text/tokenizer_impl.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"
#include "util/sha256.h"

namespace ct {

fs::path tokenizer_json_path(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / kTokenizerJsonFile, ec) && fs::exists(dir / kTokenizerJsonFileBefore, ec))
    return dir / kTokenizerJsonFileBefore;
  return dir / kTokenizerJsonFile;
}

std::string Tokenizer::Impl::tiktoken_text() const {
  std::string text;
  text.reserve(rank_bytes.size() * 16);
  for (size_t rank = 0; rank < rank_bytes.size(); ++rank) {
    text += base64_encode(rank_bytes[rank]);
    text += ' ';
    text += std::to_string(rank);
    text += '\n';
  }
  return text;
}

std::string Tokenizer::Impl::json_text() const {
  OrderedJson j;
  j["format"] = "clocktrain-bpe";
  j["version"] = 1;
  j["pattern"] = std::string(kSplitPattern);
  j["vocab_size"] = vocab_size();
  j["mergeable_ranks"] = num_ranks();
  OrderedJson specials = OrderedJson::object();
  for (size_t i = 0; i < special_names.size(); ++i) specials[special_names[i]] = num_ranks() + static_cast<int32_t>(i);
  j["special_tokens"] = specials;
  return j.dump(2) + "\n";
}

namespace {

std::vector<std::string> parse_tiktoken(std::string_view text, const std::string& name) {
  std::vector<std::string> rank_bytes;
  size_t line_number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;  // tiktoken skips blank lines too
    const std::string where = str(name, ":", line_number);
    const size_t space = line.find(' ');
    check(space != std::string_view::npos, where, ": expected '<base64 token bytes> <rank>', got '",
          line.substr(0, 80), "'");
    std::string_view b64 = line.substr(0, space), rank_text = line.substr(space + 1);
    check(!rank_text.empty(), where, ": missing rank after the token bytes");
    int64_t rank = -1;
    auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    check(ec == std::errc() && end == rank_text.data() + rank_text.size() && rank >= 0, where,
          ": rank: expected a non-negative integer, got '", rank_text.substr(0, 40), "'");
    auto bytes = base64_decode(b64);
    check(bytes.has_value(), where, ": token bytes: invalid base64 '", b64.substr(0, 80), "'");
    check(!bytes->empty(), where, ": token bytes: empty token");
    const auto expected = static_cast<int64_t>(rank_bytes.size());
    check(rank >= expected, where, ": rank ", rank, " appears twice (ranks must be 0, 1, 2, ... in order)");
    check(rank == expected, where, ": rank ", rank, " leaves a gap: expected rank ", expected,
          " (ranks must be 0, 1, 2, ... in order)");
    rank_bytes.push_back(std::move(*bytes));
  }
  check(!rank_bytes.empty(), name, ": no tokens");
  return rank_bytes;
}

}  // namespace

Tokenizer Tokenizer::load(const fs::path& dir) {
  const fs::path tiktoken_path = dir / kTokenizerTiktokenFile, json_path = tokenizer_json_path(dir);
  check(fs::is_directory(dir), "tokenizer: ", dir.string(), ": not a folder (expected one holding ",
        kTokenizerTiktokenFile, " and ", kTokenizerJsonFile, ")");
  check(fs::exists(tiktoken_path), "tokenizer: ", tiktoken_path.string(), ": missing");
  check(fs::exists(json_path), "tokenizer: ", json_path.string(), ": missing");
  return from_file_contents(read_file(tiktoken_path), read_file(json_path), tiktoken_path.string(),
                            json_path.string());
}

Tokenizer Tokenizer::from_file_contents(std::string_view tiktoken_text, std::string_view json_text,
                                        const std::string& tiktoken_name, const std::string& json_name) {
  std::vector<std::string> rank_bytes = parse_tiktoken(tiktoken_text, tiktoken_name);
  const auto num_ranks = static_cast<int64_t>(rank_bytes.size());

  const Json j = json_from_text(json_text, json_name);
  const std::string& where = json_name;
  check(j.is_object(), where, ": expected a JSON object");
  if (j.contains("format"))
    check(j["format"] == "clocktrain-bpe", where, ": field 'format': expected \"clocktrain-bpe\", got ", j["format"].dump());
  if (j.contains("version"))
    check(j["version"] == 1, where, ": field 'version': expected 1 (this build reads version 1), got ", j["version"].dump());
  const auto pattern = json_field<std::string>(j, "pattern", where);
  check(pattern == kSplitPattern, where, ": field 'pattern': clocktrain implements only the split pattern ",
        kSplitPattern, ", got ", pattern);
  check(j.contains("special_tokens") && j["special_tokens"].is_object(), where,
        ": field 'special_tokens': expected an object of name -> id");
  const Json& specials = j["special_tokens"];
  std::vector<std::string> special_names(specials.size());
  for (auto it = specials.begin(); it != specials.end(); ++it) {
    check(it.value().is_number_integer(), where, ": special token '", it.key(), "': expected an integer id");
    const int64_t id = it.value().get<int64_t>();
    const int64_t slot = id - num_ranks;
    check(slot >= 0 && slot < static_cast<int64_t>(special_names.size()), where, ": special token '", it.key(),
          "': id ", id, " is not in [", num_ranks, ", ", num_ranks + static_cast<int64_t>(specials.size()),
          "): special tokens follow the ", num_ranks, " ranks of ", tiktoken_name);
    check(special_names[slot].empty(), where, ": special tokens '", special_names[slot], "' and '", it.key(),
          "' share id ", id);
    special_names[slot] = it.key();
  }
  check(!special_names.empty() && special_names[0] == "<|bos|>", where,
        ": the first special token (id ", num_ranks, ") must be <|bos|>");
  const int64_t vocab_size = json_field<int64_t>(j, "vocab_size", where);
  check(vocab_size == num_ranks + static_cast<int64_t>(special_names.size()), where, ": field 'vocab_size': ",
        vocab_size, " but ", tiktoken_name, " has ", num_ranks, " ranks and there are ",
        special_names.size(), " special tokens");
  if (j.contains("mergeable_ranks"))
    check(json_field<int64_t>(j, "mergeable_ranks", where) == num_ranks, where, ": field 'mergeable_ranks': ",
          j["mergeable_ranks"].dump(), " but ", tiktoken_name, " has ", num_ranks, " ranks");
  return Tokenizer(Impl::build(std::move(rank_bytes), std::move(special_names), tiktoken_name));
}

void Tokenizer::save(const fs::path& dir) const {
  check(impl_ != nullptr, "tokenizer: save() before it was loaded or trained");
  ensure_directory(dir);
  write_file_atomic(dir / kTokenizerTiktokenFile, impl_->tiktoken_text());
  write_file_atomic(dir / kTokenizerJsonFile, impl_->json_text());
}

// The hash of tokenizer.tiktoken's canonical text followed by tokenizer.json's: the same for a
// tokenizer whatever the formatting of the files it was loaded from.
std::string Tokenizer::sha256() const {
  check(impl_ != nullptr, "tokenizer: sha256() before it was loaded or trained");
  Sha256 hash;
  hash.update(impl_->tiktoken_text());
  hash.update(impl_->json_text());
  return hash.hex_digest();
}

}  // namespace ct
