#include "eval/bpb.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <numbers>

#include "data/corpus_reader.h"
#include "util/clock.h"
#include "util/error.h"

namespace ct {

std::vector<std::string> read_documents(const std::filesystem::path& dir_or_file, std::vector<std::string>* names) {
  CorpusReader reader(list_corpus_files(dir_or_file));
  std::vector<std::string> texts;
  if (names) names->clear();
  Document doc;
  while (reader.next(doc)) {
    texts.push_back(std::move(doc.text));
    if (!names) continue;
    const auto id = doc.metadata.find("id");
    names->push_back(id != doc.metadata.end() && id->is_string() ? id->get<std::string>()
                                                                 : str(doc.origin, ":", doc.line));
  }
  check(!texts.empty(), dir_or_file.string(), ": no documents");
  return texts;
}

std::vector<int32_t> tokenize_documents(const std::vector<std::string>& documents, const TextEncoder& encoder,
                                        std::vector<int64_t>* starts) {
  std::vector<std::vector<int32_t>> per_doc(documents.size());
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < static_cast<int64_t>(documents.size()); ++i) {
    try {
      per_doc[i].push_back(encoder.bos_id());
      encoder.encode_append(documents[i], per_doc[i]);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  std::vector<int32_t> stream;
  size_t total = 0;
  for (const auto& d : per_doc) total += d.size();
  stream.reserve(total);
  if (starts) starts->clear();
  for (const auto& d : per_doc) {
    if (starts) starts->push_back(static_cast<int64_t>(stream.size()));
    stream.insert(stream.end(), d.begin(), d.end());
  }
  return stream;
}

namespace {

double bits_per_byte(double nats, int64_t bytes) { return nats / (std::numbers::ln2 * static_cast<double>(bytes)); }

}  // namespace

double BpbPart::bpb() const { return bytes > 0 ? bits_per_byte(nats, bytes) : std::nan(""); }

BpbResult evaluate_bpb(const std::vector<int32_t>& full_stream, const std::vector<int32_t>& token_bytes,
                       SequenceScorer& scorer, const BpbOptions& options) {
  Stopwatch watch;
  BpbResult result;
  const int64_t T = options.sequence_len > 0 ? options.sequence_len : scorer.context_length();
  check(T >= 1, "val_bpb: sequence_len must be at least 1, got ", T);
  check(T <= scorer.context_length(), "val_bpb: sequence_len ", T, " exceeds the model's context ",
        scorer.context_length());
  result.sequence_len = T;
  int64_t n = static_cast<int64_t>(full_stream.size());
  if (options.max_target_tokens > 0) n = std::min(n, options.max_target_tokens + 1);
  check(n >= 2, "val_bpb: need at least 2 tokens, the stream has ", n);
  const int64_t vocab = static_cast<int64_t>(token_bytes.size());
  for (int64_t i = 0; i < n; ++i)
    check(full_stream[i] >= 0 && full_stream[i] < vocab, "val_bpb: token ", full_stream[i], " at position ", i,
          " is outside the vocabulary of ", vocab, " tokens");
  const int64_t total_targets = n - 1;
  const int64_t rows = (total_targets + T - 1) / T;
  const int64_t per_call = std::max<int64_t>(1, options.rows_per_call);
  const auto& starts = options.document_starts;
  for (size_t d = 0; d < starts.size(); ++d)
    check(starts[d] >= 0 && (d == 0 ? starts[d] == 0 : starts[d] > starts[d - 1]),
          "val_bpb: document start ", d, " (", starts[d], ") is not after the previous one (the first must be 0)");
  std::vector<BpbPart> parts(starts.size());
  for (size_t d = 0; d < parts.size(); ++d) parts[d].document = static_cast<int64_t>(d);

  for (int64_t first = 0; first < rows; first += per_call) {
    const int64_t last = std::min(rows, first + per_call);
    std::vector<std::vector<int32_t>> batch;
    for (int64_t r = first; r < last; ++r) {
      const int64_t begin = r * T, end = std::min(n, begin + T + 1);
      batch.emplace_back(full_stream.begin() + begin, full_stream.begin() + end);
    }
    std::vector<SequenceScores> scores;
    scorer.score(batch, scores);
    check(scores.size() == batch.size(), "val_bpb: the scorer returned ", scores.size(), " results for ",
          batch.size(), " rows");
    for (size_t b = 0; b < batch.size(); ++b) {
      const auto& row = batch[b];
      check(scores[b].loss.size() == row.size() - 1, "val_bpb: the scorer returned ", scores[b].loss.size(),
            " losses for a row of ", row.size(), " tokens");
      const int64_t row_begin = (first + static_cast<int64_t>(b)) * T;
      for (size_t i = 0; i + 1 < row.size(); ++i) {
        const int64_t position = row_begin + static_cast<int64_t>(i) + 1;  // the target's place in the stream
        // A NaN or Inf loss would make val_bpb NaN or Inf: not a score (docs/eval.md).
        check(std::isfinite(scores[b].loss[i]), "val_bpb: the model's loss for the target at stream position ",
              position, " (row ", first + static_cast<int64_t>(b), ", token ", row[i + 1], ") is ", scores[b].loss[i],
              ": the model's outputs are not finite");
        const int32_t bytes = token_bytes[row[i + 1]];
        result.targets += 1;
        if (bytes <= 0) continue;
        const double nats = static_cast<double>(scores[b].loss[i]);
        result.nats += nats;
        result.bytes += bytes;
        result.counted_targets += 1;
        if (parts.empty()) continue;
        BpbPart& part = parts[std::upper_bound(starts.begin(), starts.end(), position) - starts.begin() - 1];
        part.nats += nats;
        part.bytes += bytes;
        part.counted_targets += 1;
      }
    }
    result.rows += static_cast<int64_t>(batch.size());
    if (options.progress) options.progress(result.targets, total_targets);
  }
  check(result.bytes > 0, "val_bpb: no target with a byte length (only special tokens?)");
  result.bpb = bits_per_byte(result.nats, result.bytes);
  for (BpbPart& part : parts)
    if (part.counted_targets > 0) result.documents.push_back(std::move(part));
  result.seconds = watch.seconds();
  return result;
}

}  // namespace ct
