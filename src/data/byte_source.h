#pragma once
// Streaming byte sources for corpus files: plain, zstd (.zst) and gzip (.gz), chosen by extension.
// Nothing holds a whole file in memory; a truncated or corrupt compressed stream is an error that
// names the file and the compressed byte offset where it went wrong.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace ct {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `capacity` bytes into `buffer`; returns 0 only at the end of the stream.
  virtual size_t read(char* buffer, size_t capacity) = 0;
  // Bytes consumed from the file on disk so far (compressed bytes for .zst/.gz), for progress.
  virtual uint64_t file_bytes_consumed() const = 0;
};

enum class Compression { none, zstd, gzip };

// .zst -> zstd, .gz -> gzip, anything else -> none.
Compression compression_of(const std::filesystem::path& path);

std::unique_ptr<ByteSource> open_byte_source(const std::filesystem::path& path);

// Splits a byte source into lines ('\n', with a trailing '\r' removed); the last line needs no
// newline. Lines may be arbitrarily long (a whole book is one JSONL line).
class LineReader {
 public:
  explicit LineReader(std::unique_ptr<ByteSource> source);
  // Fills `line` with the next line; false at the end. line_number() is then its 1-based number.
  bool next(std::string& line);
  int64_t line_number() const { return line_number_; }
  uint64_t file_bytes_consumed() const { return source_->file_bytes_consumed(); }
  // Uncompressed bytes handed out so far (newlines included).
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  std::unique_ptr<ByteSource> source_;
  std::string buffer_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace ct
