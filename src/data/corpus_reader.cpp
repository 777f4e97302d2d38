#include "data/corpus_reader.h"

#include <algorithm>

#include "util/error.h"
#include "util/files.h"

namespace ct {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string RawDocument::where() const {
  if (kind == Kind::parquet_row) return str(origin, ": row ", line);
  return line > 0 ? str(origin, ":", line) : origin;
}

Document parse_document(RawDocument raw) {
  Document doc;
  doc.origin = std::move(raw.origin);
  doc.line = raw.line;
  if (raw.kind == RawDocument::Kind::text_file) {
    doc.text = std::move(raw.payload);
    doc.metadata = Json{{"file", std::filesystem::path(doc.origin).filename().string()}};
    return doc;
  }
  if (raw.kind == RawDocument::Kind::parquet_row) {
    doc.text = std::move(raw.payload);  // the reader already checked that the column holds strings
    return doc;
  }
  const std::string where = str(doc.origin, ":", doc.line);
  Json object = json_from_text(raw.payload, where);  // the byte offset counts from the line's start
  check(object.is_object(), where, ": expected a JSON object with a \"text\" field, got ", object.type_name());
  auto text = object.find("text");
  check(text != object.end(), where, ": missing field \"text\"");
  check(text->is_string(), where, ": field \"text\": expected a string, got ", text->type_name());
  doc.text = std::move(text->get_ref<std::string&>());
  object.erase(text);
  doc.metadata = std::move(object);
  return doc;
}

bool is_text_file(const std::filesystem::path& path) { return ends_with(path.filename().string(), ".txt"); }

bool is_corpus_file(const std::filesystem::path& path) {
  std::string name = path.filename().string();
  return ends_with(name, ".jsonl") || ends_with(name, ".jsonl.zst") || ends_with(name, ".jsonl.gz") ||
         ends_with(name, ".txt") || is_parquet_file(path);
}

std::vector<std::filesystem::path> list_corpus_files(const std::filesystem::path& dir_or_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto status = fs::status(dir_or_file, ec);
  check(!ec && fs::exists(status), dir_or_file.string(), ": no such file or folder");
  if (fs::is_regular_file(status)) {
    check(is_corpus_file(dir_or_file), dir_or_file.string(),
          ": not a corpus file (expected .jsonl, .jsonl.zst, .jsonl.gz, .txt or .parquet)");
    return {dir_or_file};
  }
  check(fs::is_directory(status), dir_or_file.string(), ": not a file or folder");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir_or_file)) {
    if (entry.is_regular_file() && is_corpus_file(entry.path())) files.push_back(entry.path());
  }
  check(!files.empty(), dir_or_file.string(),
        ": empty corpus: no *.jsonl.zst or *.jsonl files (nor *.jsonl.gz, *.txt or *.parquet) in this folder");
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });
  return files;
}

CorpusReader::CorpusReader(std::vector<std::filesystem::path> files, std::string text_column)
    : files_(std::move(files)), text_column_(std::move(text_column)) {}
CorpusReader::~CorpusReader() = default;
CorpusReader::CorpusReader(CorpusReader&&) noexcept = default;
CorpusReader& CorpusReader::operator=(CorpusReader&&) noexcept = default;

bool CorpusReader::next(RawDocument& doc) {
  while (file_index_ < files_.size()) {
    const auto& path = files_[file_index_];
    if (is_text_file(path)) {
      doc.kind = RawDocument::Kind::text_file;
      doc.payload = read_file(path);
      doc.origin = path.string();
      doc.line = 0;
      finished_bytes_ += doc.payload.size();
      finished_file_bytes_ += doc.payload.size();
      ++file_index_;
      return true;
    }
    if (is_parquet_file(path)) {
      if (!parquet_) {
        parquet_ = std::make_unique<ParquetTextReader>(path, text_column_);
        parquet_bytes_ = 0;
      }
      if (parquet_->next(doc.payload)) {
        doc.kind = RawDocument::Kind::parquet_row;
        doc.origin = path.string();
        doc.line = parquet_->row_number();
        parquet_bytes_ += doc.payload.size();
        return true;
      }
      finished_bytes_ += parquet_bytes_;
      finished_file_bytes_ += parquet_->file_bytes_consumed();
      parquet_.reset();
      ++file_index_;
      continue;
    }
    if (!lines_) lines_ = std::make_unique<LineReader>(open_byte_source(path), path.string());
    while (lines_->next(doc.payload)) {
      // Blank lines separate nothing in JSONL; skip them rather than call them malformed.
      if (doc.payload.find_first_not_of(" \t\r") == std::string::npos) continue;
      doc.kind = RawDocument::Kind::jsonl_line;
      doc.origin = path.string();
      doc.line = lines_->line_number();
      return true;
    }
    finished_bytes_ += lines_->bytes_read();
    finished_file_bytes_ += lines_->file_bytes_consumed();
    lines_.reset();
    ++file_index_;
  }
  return false;
}

bool CorpusReader::next(Document& doc) {
  RawDocument raw;
  if (!next(raw)) return false;
  doc = parse_document(std::move(raw));
  return true;
}

uint64_t CorpusReader::bytes_read() const {
  return finished_bytes_ + (lines_ ? lines_->bytes_read() : 0) + (parquet_ ? parquet_bytes_ : 0);
}

uint64_t CorpusReader::file_bytes_consumed() const {
  return finished_file_bytes_ + (lines_ ? lines_->file_bytes_consumed() : 0) +
         (parquet_ ? parquet_->file_bytes_consumed() : 0);
}

}  // namespace ct
