#include "data/prepare.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <future>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_set>

#include "data/corpus_reader.h"
#include "data/shard.h"
#include "data/shard_sequence.h"
#include "data/staging.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/sha256.h"
#include "util/text_format.h"
#include "util/threads.h"

namespace ct {

namespace fs = std::filesystem;

int64_t heldout_stride(int64_t corpus_documents, uint64_t corpus_bytes, int64_t heldout_tokens) {
  constexpr double kBytesPerTokenEstimate = 4.0;
  if (corpus_documents <= 0 || heldout_tokens <= 0) return 1;
  double average_document_bytes = static_cast<double>(corpus_bytes) / static_cast<double>(corpus_documents);
  double expected_documents =
      std::ceil(static_cast<double>(heldout_tokens) * kBytesPerTokenEstimate / std::max(1.0, average_document_bytes));
  // Twice the expected number of candidates fit in the corpus, so the slice fills within about its first half.
  int64_t stride = static_cast<int64_t>(static_cast<double>(corpus_documents) / (2.0 * expected_documents));
  return std::max<int64_t>(1, stride);
}

namespace {

struct EncodedDocument {
  std::vector<int32_t> tokens;  // <|bos|>, then the text's ids
  std::string text_sha256;      // when hashing was asked for
  uint64_t text_bytes = 0;
};

// Shared progress counters: workers add, the main thread draws.
struct Progress {
  ProgressLine line;
  Stopwatch clock;
  std::atomic<uint64_t> text_bytes{0};
  std::atomic<int64_t> tokens{0};
  uint64_t total_bytes = 0;  // the corpus + val bytes counted by the first pass
  std::string stage;
  bool enabled = true;

  void draw(bool force = false) {
    if (!enabled || !line.enabled()) return;
    double seconds = std::max(1e-9, clock.seconds());
    double mb = static_cast<double>(text_bytes.load()) / 1e6;
    line.update(str("data prepare: ", stage, ": ", format_fixed(mb, 1), " / ", format_fixed(static_cast<double>(total_bytes) / 1e6, 1),
                    " MB read, ", format_fixed(static_cast<double>(tokens.load()) / 1e6, 1), "M tokens, ",
                    format_fixed(mb / seconds, 1), " MB/s, ", static_cast<int64_t>(seconds), " s"),
                force);
  }
};

// Parses and encodes a batch on `threads` threads; results come back in input order, and the first
// error in document order is the one thrown, so failures are as deterministic as the output.
std::vector<EncodedDocument> encode_batch(std::vector<RawDocument>& batch, const TextEncoder& encoder, int threads,
                                          bool hash_texts, Progress& progress) {
  const size_t n = batch.size();
  std::vector<EncodedDocument> encoded(n);
  std::vector<std::exception_ptr> errors(n);
  // Largest documents first, so that no thread is left with a big one at the end of the batch.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return batch[a].payload.size() > batch[b].payload.size(); });
  const int32_t bos = encoder.bos_id();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (size_t k = 0; k < n; ++k) {
    size_t i = order[k];
    try {
      Document doc = parse_document(std::move(batch[i]));
      EncodedDocument& out = encoded[i];
      out.text_bytes = doc.text.size();
      if (hash_texts) out.text_sha256 = sha256_hex(doc.text);
      out.tokens.reserve(doc.text.size() / 3 + 2);
      out.tokens.push_back(bos);
      encoder.encode_append(doc.text, out.tokens);
      progress.text_bytes += out.text_bytes;
      progress.tokens += static_cast<int64_t>(out.tokens.size());
    } catch (...) {
      errors[i] = std::current_exception();
    }
    if (omp_get_thread_num() == 0) progress.draw();
  }
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return encoded;
}

// Reads batches of raw documents (about `batch_bytes` of payload each) one batch ahead on a helper
// thread, so that decompression and line splitting overlap the encoding of the batch before.
// A reading error surfaces from the next() that would have returned that batch.
class PrefetchingBatchReader {
 public:
  PrefetchingBatchReader(std::vector<fs::path> files, const std::string& text_column, int64_t batch_bytes)
      : reader_(std::move(files), text_column), batch_bytes_(batch_bytes) {}

  bool next(std::vector<RawDocument>& batch) {
    if (!pending_.valid()) pending_ = start();
    batch = pending_.get();
    if (batch.empty()) return false;
    pending_ = start();
    return true;
  }

 private:
  std::future<std::vector<RawDocument>> start() {
    return std::async(std::launch::async, [this] {
      std::vector<RawDocument> batch;
      int64_t bytes = 0;
      RawDocument raw;
      while (bytes < batch_bytes_ && reader_.next(raw)) {
        bytes += static_cast<int64_t>(raw.payload.size());
        batch.push_back(std::move(raw));
        raw = RawDocument{};
      }
      return batch;
    });
  }

  CorpusReader reader_;
  int64_t batch_bytes_;
  std::future<std::vector<RawDocument>> pending_;  // last member: its destructor waits for the read
};

// The first pass over the corpus: how many documents, how many bytes (lines, not yet parsed), one
// file per thread.
std::pair<int64_t, uint64_t> count_documents(const std::vector<fs::path>& files, const std::string& text_column,
                                             int threads) {
  std::vector<int64_t> documents(files.size(), 0);
  std::vector<uint64_t> bytes(files.size(), 0);
  std::vector<std::exception_ptr> errors(files.size());
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      CorpusReader reader({files[i]}, text_column);
      RawDocument raw;
      while (reader.next(raw)) ++documents[i];
      bytes[i] = reader.bytes_read();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return {std::accumulate(documents.begin(), documents.end(), int64_t{0}),
          std::accumulate(bytes.begin(), bytes.end(), uint64_t{0})};
}

// Paths are recorded relative to the data folder ("corpus/train_000.jsonl.zst"), so that the
// manifest does not depend on where the data lives.
std::vector<SourceRecord> describe_sources(const std::vector<fs::path>& files, const std::string& folder,
                                           const std::string& split) {
  std::vector<SourceRecord> records(files.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < files.size(); ++i) {
    records[i].path = folder + "/" + files[i].filename().string();
    records[i].split = split;
    records[i].bytes = fs::file_size(files[i]);
    records[i].sha256 = sha256_file(files[i]);
  }
  return records;
}

}  // namespace

PrepareReport prepare_data(const PrepareSettings& settings, const TextEncoder& encoder) {
  Stopwatch total_clock;
  check(settings.shard_tokens > 0, "--shard-tokens: expected a positive count, got ", settings.shard_tokens);
  check(settings.heldout_tokens >= 0, "--heldout-tokens: expected a count >= 0, got ", settings.heldout_tokens);
  check(settings.batch_bytes > 0, "prepare: batch size must be positive");
  const int threads = settings.threads > 0 ? settings.threads : available_cores();
  const fs::path corpus_dir = settings.data_dir / "corpus";
  const fs::path val_dir = settings.data_dir / "val";
  check(fs::is_directory(corpus_dir), corpus_dir.string(), ": no corpus folder (expected ",
        settings.data_dir.string(), " to hold corpus/ and val/)");
  const std::vector<fs::path> corpus_files = list_corpus_files(corpus_dir);
  const std::vector<fs::path> val_files = fs::exists(val_dir) ? list_corpus_files(val_dir) : std::vector<fs::path>{};
  // The validation documents must never leak into training: no corpus file may be a val file.
  for (const auto& f : val_files) {
    for (const auto& c : corpus_files) {
      check(!fs::equivalent(f, c), c.string(), ": is also a validation file (", f.string(), ")");
    }
  }

  Manifest manifest;
  manifest.tokenizer_sha256 = encoder.sha256();
  manifest.vocab_size = encoder.vocab_size();
  manifest.bos_id = encoder.bos_id();
  manifest.shard_version = shard_version_for_vocab(manifest.vocab_size);
  manifest.sources = describe_sources(corpus_files, "corpus", "train");
  for (auto& s : describe_sources(val_files, "val", "val")) manifest.sources.push_back(std::move(s));

  Progress progress;
  progress.enabled = settings.progress;
  StagingFolder staging(settings.out_dir);

  // 1. Validation documents: their own shards, and the hashes of their texts, so that a copy of a
  //    validation document inside the training corpus is kept out of train and heldout.
  std::unordered_set<std::string> val_text_hashes;
  ShardSequence val_shards(staging.path(), "val", settings.shard_tokens, manifest.shard_version);
  uint64_t val_bytes = 0;
  {
    progress.stage = "val";
    PrefetchingBatchReader reader(val_files, settings.text_column, settings.batch_bytes);
    std::vector<RawDocument> batch;
    while (reader.next(batch)) {
      for (auto& doc : encode_batch(batch, encoder, threads, true, progress)) {
        val_text_hashes.insert(doc.text_sha256);
        val_bytes += doc.text_bytes;
        val_shards.append_document(doc.tokens);
      }
    }
  }

  // 2. A first pass over the corpus: documents and bytes, to place the held-out slice.
  progress.stage = "counting corpus";
  progress.draw(true);
  auto [corpus_documents, corpus_bytes] = count_documents(corpus_files, settings.text_column, threads);
  check(corpus_documents > 0, corpus_dir.string(), ": empty corpus: no documents in ", corpus_files.size(),
        " file(s)");
  progress.total_bytes = corpus_bytes + progress.text_bytes.load();
  const int64_t stride = heldout_stride(corpus_documents, corpus_bytes, settings.heldout_tokens);

  // 3. The corpus, in order: each document to heldout, train, or (a copy of a val document) nowhere.
  ShardSequence train_shards(staging.path(), "train", settings.shard_tokens, manifest.shard_version);
  ShardSequence heldout_shards(staging.path(), "heldout", settings.shard_tokens, manifest.shard_version);
  uint64_t train_bytes = 0, heldout_bytes = 0;
  int64_t val_copies_excluded = 0, document_index = 0;
  {
    progress.stage = "corpus";
    PrefetchingBatchReader reader(corpus_files, settings.text_column, settings.batch_bytes);
    std::vector<RawDocument> batch;
    while (reader.next(batch)) {
      for (auto& doc : encode_batch(batch, encoder, threads, !val_text_hashes.empty(), progress)) {
        int64_t index = document_index++;
        if (!val_text_hashes.empty() && val_text_hashes.count(doc.text_sha256) > 0) {
          ++val_copies_excluded;
          continue;
        }
        bool heldout_candidate = settings.heldout_tokens > 0 && index % stride == stride - 1;
        if (heldout_candidate && heldout_shards.tokens() < settings.heldout_tokens &&
            heldout_shards.documents() < corpus_documents - 1) {
          heldout_shards.append_document(doc.tokens);
          heldout_bytes += doc.text_bytes;
        } else {
          train_shards.append_document(doc.tokens);
          train_bytes += doc.text_bytes;
        }
      }
    }
    check(document_index == corpus_documents, corpus_dir.string(), ": the corpus changed while it was read (",
          corpus_documents, " documents, then ", document_index, ")");
  }
  check(train_shards.tokens() > 0, corpus_dir.string(), ": no training documents are left (",
        heldout_shards.documents(), " held out, ", val_copies_excluded, " copies of validation documents)");
  progress.draw(true);
  progress.line.finish();

  for (auto* sequence : {&train_shards, &heldout_shards, &val_shards}) {
    for (auto& record : sequence->finish()) manifest.shards.push_back(std::move(record));
  }
  manifest.settings = Json{{"shard_tokens", settings.shard_tokens},
                           {"heldout_tokens", settings.heldout_tokens},
                           {"heldout_stride", stride},
                           {"heldout_rule", str("every document whose corpus index i has i % ", stride, " == ",
                                                stride - 1, ", until the slice holds ", settings.heldout_tokens,
                                                " tokens")},
                           {"bos_before_each_document", true},
                           {"val_copy_rule", "training documents whose text equals a val document's are left out"}};
  // Only where it applies, so that a JSONL-only manifest is the same as before Parquet input existed.
  if (std::any_of(corpus_files.begin(), corpus_files.end(), is_parquet_file) ||
      std::any_of(val_files.begin(), val_files.end(), is_parquet_file)) {
    manifest.settings["parquet_text_column"] = settings.text_column;
  }
  manifest.summary = Json{{"corpus_documents", corpus_documents},
                          {"val_copies_excluded", val_copies_excluded},
                          {"documents", {{"train", train_shards.documents()},
                                         {"heldout", heldout_shards.documents()},
                                         {"val", val_shards.documents()}}},
                          {"text_bytes", {{"train", train_bytes}, {"heldout", heldout_bytes}, {"val", val_bytes}}},
                          {"tokens", {{"train", train_shards.tokens()},
                                      {"heldout", heldout_shards.tokens()},
                                      {"val", val_shards.tokens()}}}};
  save_manifest(manifest, staging.path() / kManifestFileName);

  // Shards the previous manifest listed and this one does not are removed after the switch.
  std::set<std::string> previous_shards;
  if (fs::exists(settings.out_dir / kManifestFileName)) {
    try {
      for (const auto& s : load_manifest(settings.out_dir).shards) previous_shards.insert(s.name);
    } catch (const Error&) {
      // An unreadable old manifest: leave whatever it named alone.
    }
  }
  std::vector<std::string> names;
  for (const auto& s : manifest.shards) {
    names.push_back(s.name);
    previous_shards.erase(s.name);
  }
  names.push_back(kManifestFileName);
  staging.commit(names);
  for (const auto& stale : previous_shards) {
    std::error_code ec;
    fs::remove(settings.out_dir / stale, ec);
  }

  PrepareReport report;
  report.manifest = std::move(manifest);
  report.manifest_sha256 = manifest_sha256(report.manifest);
  report.seconds = total_clock.seconds();
  report.text_bytes = progress.text_bytes.load();
  report.tokens = train_shards.tokens() + heldout_shards.tokens() + val_shards.tokens();
  report.threads = threads;
  return report;
}

}  // namespace ct
