#pragma once
// Corpus readers (docs/formats.md, "Raw text"): JSONL documents with a "text" field (other fields kept as
// metadata), plain or .zst or .gz, .txt files holding one document each, and Parquet files holding
// one document per row in a string column (parquet_reader.h). A corpus is a list of
// such files read in name order, one document at a time: nothing holds the whole corpus in memory.
//
// Reading is split in two so that parsing can run on worker threads: CorpusReader hands out raw
// documents (a JSON line or a text file's bytes, with where it came from) in corpus order, and
// parse_document turns one into text + metadata, with errors naming the file and line.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/byte_source.h"
#include "data/parquet_reader.h"
#include "util/json.h"

namespace ct {

struct RawDocument {
  enum class Kind { jsonl_line, text_file, parquet_row };
  Kind kind = Kind::jsonl_line;
  std::string payload;  // the JSON line, the whole text file, or the Parquet row's text
  std::string origin;   // the file it came from, as given
  int64_t line = 0;     // 1-based line number in the (uncompressed) file or row number; 0 for a text file
  std::string where() const;  // "file:line", "file: row N" or "file", for messages
};

struct Document {
  std::string text;
  Json metadata = Json::object();  // the JSON object's other fields; {"file": name} for a text file
  std::string origin;
  int64_t line = 0;
};

// Parses a raw document. Errors: "<file>:<line>: invalid JSON ...", "... missing field \"text\"",
// "... field \"text\": expected a string, got <type>", "... expected a JSON object".
Document parse_document(RawDocument raw);

// True for *.jsonl, *.jsonl.zst, *.jsonl.gz, *.txt and *.parquet (also in a build without Parquet
// support, whose reader then names the file and says how to get it).
bool is_corpus_file(const std::filesystem::path& path);
bool is_text_file(const std::filesystem::path& path);

// The corpus files of a folder (not recursive), sorted by file name; a single file is returned as
// itself. Errors if the path does not exist or the folder holds no corpus file.
std::vector<std::filesystem::path> list_corpus_files(const std::filesystem::path& dir_or_file);

class CorpusReader {
 public:
  // `text_column`: the column of Parquet files that holds the text.
  explicit CorpusReader(std::vector<std::filesystem::path> files, std::string text_column = "text");
  ~CorpusReader();
  CorpusReader(CorpusReader&&) noexcept;
  CorpusReader& operator=(CorpusReader&&) noexcept;

  // The next raw document in corpus order (blank JSONL lines are skipped); false at the end.
  bool next(RawDocument& doc);
  // The next document, parsed.
  bool next(Document& doc);

  const std::vector<std::filesystem::path>& files() const { return files_; }
  // Uncompressed bytes read so far, over all files (for Parquet, the texts' bytes).
  uint64_t bytes_read() const;
  // Bytes of the files on disk consumed so far (compressed bytes for .zst/.gz).
  uint64_t file_bytes_consumed() const;

 private:
  std::vector<std::filesystem::path> files_;
  size_t file_index_ = 0;
  std::string text_column_;
  std::unique_ptr<LineReader> lines_;          // the open JSONL file, if any
  std::unique_ptr<ParquetTextReader> parquet_;  // the open Parquet file, if any
  uint64_t parquet_bytes_ = 0;                  // text bytes read from the open Parquet file
  uint64_t finished_bytes_ = 0, finished_file_bytes_ = 0;
};

}  // namespace ct
