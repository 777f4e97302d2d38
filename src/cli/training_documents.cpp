#include "cli/training_documents.h"

#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "data/parquet_reader.h"
#include "util/error.h"
#include "util/json.h"
#include "util/threads.h"

namespace ct::cli {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
struct DctxFreer {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Streams a file's (decompressed) bytes in blocks to `sink`.
void stream_file(const fs::path& path, const std::function<void(std::string_view)>& sink) {
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  check(file != nullptr, path.string(), ": cannot open for reading");
  const bool zstd = ends_with(path.string(), ".zst");
  std::unique_ptr<ZSTD_DCtx, DctxFreer> dctx(zstd ? ZSTD_createDCtx() : nullptr);
  std::string in(ZSTD_DStreamInSize() * 8, '\0'), out(ZSTD_DStreamOutSize() * 8, '\0');
  size_t last_ret = 0;
  while (true) {
    const size_t got = std::fread(in.data(), 1, in.size(), file.get());
    check(!std::ferror(file.get()), path.string(), ": read error");
    if (got == 0) break;
    if (!zstd) {
      sink(std::string_view(in.data(), got));
      continue;
    }
    ZSTD_inBuffer input{in.data(), got, 0};
    while (input.pos < input.size) {
      ZSTD_outBuffer output{out.data(), out.size(), 0};
      last_ret = ZSTD_decompressStream(dctx.get(), &output, &input);
      check(!ZSTD_isError(last_ret), path.string(), ": zstd: ", ZSTD_getErrorName(last_ret));
      sink(std::string_view(out.data(), output.pos));
    }
  }
  if (zstd) {
    // Flush what the decoder still holds.
    while (last_ret != 0) {
      ZSTD_inBuffer input{nullptr, 0, 0};
      ZSTD_outBuffer output{out.data(), out.size(), 0};
      last_ret = ZSTD_decompressStream(dctx.get(), &output, &input);
      check(!ZSTD_isError(last_ret), path.string(), ": zstd: ", ZSTD_getErrorName(last_ret));
      check(output.pos > 0 || last_ret == 0, path.string(), ": truncated zstd stream");
      sink(std::string_view(out.data(), output.pos));
    }
  }
}

}  // namespace

std::vector<fs::path> training_corpus_files(const fs::path& corpus_dir) {
  check(fs::is_directory(corpus_dir), corpus_dir.string(), ": not a folder (expected the training corpus)");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(corpus_dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() &&
        (ends_with(name, ".jsonl.zst") || ends_with(name, ".jsonl") || is_parquet_file(entry.path())))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  check(!files.empty(), corpus_dir.string(), ": no *.jsonl.zst or *.jsonl files (nor *.parquet)");
  return files;
}

namespace {

// Lines waiting to be parsed, with where they came from.
struct LineBatch {
  std::vector<std::string> lines;
  std::vector<int64_t> line_numbers;
  std::vector<const fs::path*> files;
  size_t bytes = 0;
  void clear() {
    lines.clear();
    line_numbers.clear();
    files.clear();
    bytes = 0;
  }
};

// Parses the batch's JSON lines on all threads (parsing costs more than decompressing), then hands
// the texts over in order. Returns false when on_document asked to stop.
bool flush_batch(LineBatch& batch, int threads, const std::function<bool(std::string_view)>& on_document,
                 int64_t& documents) {
  const auto n = static_cast<int64_t>(batch.lines.size());
  std::vector<std::string> texts(n), errors(n);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) {
    const std::string where = str(batch.files[i]->string(), ":", batch.line_numbers[i]);
    try {
      Json doc = Json::parse(batch.lines[i]);
      if (!(doc.is_object() && doc.contains("text") && doc["text"].is_string()))
        errors[i] = where + ": expected an object with a string field \"text\"";
      else
        texts[i] = std::move(doc["text"].get_ref<std::string&>());
    } catch (const nlohmann::json::parse_error& e) {
      errors[i] = str(where, ": invalid JSON at byte ", e.byte, ": ", e.what());
    } catch (const nlohmann::json::exception& e) {
      // out_of_range for a number beyond double (1e999); nothing may leave this OpenMP loop.
      errors[i] = str(where, ": invalid JSON: ", e.what());
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    check(errors[i].empty(), errors[i]);
    ++documents;
    if (!on_document(texts[i])) return false;
  }
  batch.clear();
  return true;
}

}  // namespace

int64_t read_training_documents(const std::vector<fs::path>& files, int threads,
                                const std::function<bool(std::string_view)>& on_document,
                                const std::string& text_column) {
  int64_t documents = 0;
  LineBatch batch;
  // Small batches first, so that a small --max-chars does not parse much more than it uses.
  size_t batch_limit = size_t{1} << 20;
  bool stop = false;
  struct Stop {};
  for (const fs::path& path : files) {
    if (is_parquet_file(path)) {
      // Parquet rows are texts already (no JSON to parse): the JSON lines before them go first, in order.
      if (!flush_batch(batch, threads, on_document, documents)) {
        stop = true;
        break;
      }
      ParquetTextReader reader(path, text_column);
      std::string text;
      while (!stop && reader.next(text)) {
        ++documents;
        stop = !on_document(text);
      }
      if (stop) break;
      continue;
    }
    std::string pending;  // an incomplete line
    int64_t line_number = 0;
    auto handle_line = [&](std::string_view line) {
      ++line_number;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
      batch.lines.emplace_back(line);
      batch.line_numbers.push_back(line_number);
      batch.files.push_back(&path);
      batch.bytes += line.size();
      if (batch.bytes >= batch_limit) {
        batch_limit = std::min(batch_limit * 2, size_t{32} << 20);
        if (!flush_batch(batch, threads, on_document, documents)) {
          stop = true;
          throw Stop{};
        }
      }
    };
    try {
      stream_file(path, [&](std::string_view block) {
        size_t begin = 0;
        while (true) {
          size_t eol = block.find('\n', begin);
          if (eol == std::string_view::npos) break;
          if (pending.empty()) {
            handle_line(block.substr(begin, eol - begin));
          } else {
            pending.append(block.substr(begin, eol - begin));
            handle_line(pending);
            pending.clear();
          }
          begin = eol + 1;
        }
        pending.append(block.substr(begin));
      });
      if (!pending.empty()) handle_line(pending);
    } catch (const Stop&) {
    }
    if (stop) break;
  }
  if (!stop) flush_batch(batch, threads, on_document, documents);
  return documents;
}

}  // namespace ct::cli
