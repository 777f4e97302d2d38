#pragma once
// Helpers for the data tests: small hand-made corpus files (plain, zstd, gzip), a byte-level stand-in
// encoder (each byte its own id, <|bos|> = 256) so the pipeline is tested without training a
// tokenizer, the real tokenizer that encodes the same way, and decoding shards back into documents.
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "data/shard.h"
#include "data/text_encoder.h"
#include "test_support.h"
#include "text/base64.h"
#include "text/pretokenizer.h"
#include "text/tokenizer.h"
#include "util/files.h"
#include "util/json.h"

namespace ct::test {

// Every file of a folder (recursively), name -> bytes ("<dir>" for a folder).
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    files[std::filesystem::relative(e.path(), dir).string()] = e.is_regular_file() ? read_file(e.path()) : "<dir>";
  return files;
}

inline std::string zstd_compress(const std::string& data, int level = 3) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), level);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

inline std::string gzip_compress(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// One JSONL line for a document.
inline std::string jsonl_line(const std::string& id, const std::string& text) {
  return Json{{"id", id}, {"source", "test"}, {"text", text}}.dump() + "\n";
}

// Writes documents as JSONL, compressed according to the file name (.zst, .gz or plain).
inline void write_jsonl(const fs::path& path, const std::vector<std::pair<std::string, std::string>>& docs) {
  std::string body;
  for (const auto& [id, text] : docs) body += jsonl_line(id, text);
  std::string name = path.filename().string();
  if (name.ends_with(".zst")) body = zstd_compress(body);
  if (name.ends_with(".gz")) body = gzip_compress(body);
  fs::create_directories(path.parent_path());
  write_file_atomic(path, body);
}

class ByteEncoder : public TextEncoder {
 public:
  void encode_append(std::string_view text, std::vector<int32_t>& out) const override {
    for (unsigned char c : text) out.push_back(c);
  }
  int32_t bos_id() const override { return 256; }
  int64_t vocab_size() const override { return 257; }
  std::string sha256() const override { return std::string(64, 'b'); }
};

// A Tokenizer that encodes as ByteEncoder does: the 256 byte tokens (rank = byte), no merges, then
// <|bos|> = 256. Data prepared with it (tokenizer_encoder) carries tokenizer files that match its
// manifest, as `clocktrain data prepare` makes them.
inline Tokenizer byte_tokenizer() {
  std::string tiktoken;
  for (int b = 0; b < 256; ++b)
    tiktoken += base64_encode(std::string(1, static_cast<char>(b))) + " " + std::to_string(b) + "\n";
  const Json json = {
      {"pattern", std::string(kSplitPattern)}, {"special_tokens", {{"<|bos|>", 256}}}, {"vocab_size", 257}};
  return Tokenizer::from_file_contents(tiktoken, json.dump(), "byte.tiktoken", "byte.json");
}

// Swaps the token bytes of ranks a and b in a tokenizer.tiktoken, each line keeping its rank: a
// tokenizer that still loads but encodes differently from the one the file held.
inline void swap_tiktoken_tokens(const fs::path& path, size_t a, size_t b) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto token_of = [](const std::string& line) { return line.substr(0, line.find(' ')); };
  const std::string token_a = token_of(lines.at(a)), token_b = token_of(lines.at(b));
  lines[a] = token_b + lines[a].substr(token_a.size());
  lines[b] = token_a + lines[b].substr(token_b.size());
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  write_file_atomic(path, text);
}

// All tokens of the given shards, in order.
inline std::vector<int32_t> read_tokens(const std::vector<fs::path>& shards) {
  std::vector<int32_t> out;
  for (const auto& path : shards) {
    ShardFile shard = ShardFile::open(path);
    size_t start = out.size();
    out.resize(start + static_cast<size_t>(shard.token_count()));
    shard.copy_tokens(0, shard.token_count(), out.data() + start);
  }
  return out;
}

// Splits a ByteEncoder token stream at each <|bos|> into document texts; `starts_with_bos` says
// whether the stream began with one.
inline std::vector<std::string> split_documents(const std::vector<int32_t>& tokens, bool* starts_with_bos = nullptr) {
  std::vector<std::string> docs;
  if (starts_with_bos) *starts_with_bos = !tokens.empty() && tokens[0] == 256;
  for (int32_t t : tokens) {
    if (t == 256) {
      docs.emplace_back();
    } else if (!docs.empty()) {
      docs.back().push_back(static_cast<char>(t));
    }
  }
  return docs;
}

}  // namespace ct::test
