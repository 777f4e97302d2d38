// clocktrain data prepare: the training corpus and the validation documents into token shards with
// a manifest; clocktrain data download: the real datasets' Parquet shards (docs/data.md).
#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "data/corpus_reader.h"
#include "data/dataset_sources.h"
#include "data/download.h"
#include "data/prepare.h"
#include "data/text_encoder.h"
#include "data/tokenizer_training.h"
#include "text/bpe_trainer.h"
#include "text/tokenizer.h"
#include "util/clock.h"
#include "util/data_dir.h"
#include "util/error.h"
#include "util/progress.h"

namespace ct::cli {

namespace {

struct PrepareOptions {
  std::string data, tokenizer, out;
  std::string text_column = PrepareSettings{}.text_column;
  int64_t shard_tokens = PrepareSettings{}.shard_tokens;
  int64_t heldout_tokens = PrepareSettings{}.heldout_tokens;
  int threads = 0;
  int32_t vocab_size = BpeTrainerOptions{}.vocab_size;
};

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// The tokenizer: --tokenizer DIR, else OUT/tokenizer, else (neither given nor there) one trained on
// the corpus with the default settings of `clocktrain tokenizer train`.
Tokenizer obtain_tokenizer(const PrepareOptions& options, const PrepareSettings& settings) {
  namespace fs = std::filesystem;
  if (!options.tokenizer.empty()) return Tokenizer::load(options.tokenizer);
  const fs::path beside = settings.out_dir / "tokenizer";
  if (fs::exists(tokenizer_json_path(beside))) return Tokenizer::load(beside);
  std::printf("data prepare: no tokenizer given and none in %s: training one (vocab %d) on %s\n", beside.c_str(),
              options.vocab_size, (settings.data_dir / "corpus").c_str());
  std::fflush(stdout);
  BpeTrainerOptions trainer_options;
  trainer_options.vocab_size = options.vocab_size;
  trainer_options.threads = options.threads;
  Stopwatch clock;
  ProgressLine progress;
  Tokenizer tokenizer = train_tokenizer_on_corpus(list_corpus_files(settings.data_dir / "corpus"), trainer_options,
                                                  [&](const std::string& line) { progress.update(line); },
                                                  settings.text_column);
  progress.finish();
  std::printf("data prepare: tokenizer trained in %.1f s (sha256 %s)\n", clock.seconds(), tokenizer.sha256().c_str());
  return tokenizer;
}

void run_prepare(const PrepareOptions& options) {
  PrepareSettings settings;
  settings.data_dir = resolve_data_dir(options.data);
  settings.out_dir = options.out;
  settings.shard_tokens = options.shard_tokens;
  settings.heldout_tokens = options.heldout_tokens;
  settings.threads = options.threads;
  settings.text_column = options.text_column;
  Tokenizer tokenizer = obtain_tokenizer(options, settings);
  auto encoder = tokenizer_encoder(tokenizer);
  PrepareReport report = prepare_data(settings, *encoder);
  // The data folder carries the tokenizer that made it (written after the shards succeeded).
  tokenizer.save(settings.out_dir / "tokenizer");

  const Manifest& m = report.manifest;
  std::printf("data prepare: %.1f MB of text in %.1f s (%.2f MB/s, %d threads), tokenizer %s (vocab %lld)\n",
              static_cast<double>(report.text_bytes) / 1e6, report.seconds,
              static_cast<double>(report.text_bytes) / 1e6 / std::max(1e-9, report.seconds), report.threads,
              m.tokenizer_sha256.substr(0, 12).c_str(), static_cast<long long>(m.vocab_size));
  for (const char* split : {"train", "heldout", "val"}) {
    size_t shards = m.shards_of(split).size();
    std::printf("  %-8s %4zu shard%s %15s tokens %8s documents\n", split, shards, shards == 1 ? " " : "s",
                with_commas(m.tokens_of(split)).c_str(), with_commas(m.documents_of(split)).c_str());
  }
  if (int64_t excluded = m.summary.value("val_copies_excluded", int64_t{0}); excluded > 0) {
    std::printf("  left out %lld training document(s) identical to a validation document\n",
                static_cast<long long>(excluded));
  }
  std::printf("  manifest %s (sha256 %s)\n", (settings.out_dir / kManifestFileName).c_str(),
              report.manifest_sha256.c_str());
}

struct DownloadOptions {
  std::string source, out;
  int64_t shards = 0;
  DownloadSettings settings;
};

void run_download(DownloadOptions options) {
  std::vector<DownloadItem> items;
  const auto names = dataset_names();
  if (std::find(names.begin(), names.end(), options.source) != names.end()) {
    check(options.shards > 0, "data download ", options.source, ": --shards N is required (how many shards, from 0)");
    items = dataset_items(options.source, options.shards);
  } else if (std::filesystem::is_regular_file(options.source)) {
    check(options.shards == 0, "data download: --shards applies to a named dataset, not to a URL list");
    items = read_url_list(options.source);
  } else {
    items = dataset_items(options.source, options.shards);  // the unknown-source error, with the known names
  }
  options.settings.out_dir = options.out;
  Stopwatch clock;
  const auto records = download_files(items, options.settings);
  uint64_t fetched = 0, kept = 0, bytes = 0;
  for (const auto& r : records) {
    (r.skipped ? kept : fetched) += 1;
    bytes += r.bytes;
  }
  std::printf("data download: %llu file(s) fetched, %llu already complete, %.1f MB in %s, %.1f s\n",
              static_cast<unsigned long long>(fetched), static_cast<unsigned long long>(kept),
              static_cast<double>(bytes) / 1e6, options.out.c_str(), clock.seconds());
  std::printf("  manifest %s\n", (std::filesystem::path(options.out) / kDownloadManifestName).c_str());
}

}  // namespace

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Download datasets and prepare token shards from the corpus (docs/data.md)");
  data->require_subcommand(1);
  auto options = std::make_shared<PrepareOptions>();
  auto* prepare = data->add_subcommand("prepare", "Tokenize the corpus into train / heldout / val shards + manifest");
  prepare->add_option("--data", options->data, "Data folder with corpus/ and val/ (default: $CLOCKTRAIN_DATA or ../shared/data)");
  prepare->add_option("--tokenizer", options->tokenizer,
                      "Tokenizer folder (default: OUT/tokenizer; trained there on the corpus if absent)");
  prepare->add_option("--out", options->out, "Output folder for the shards and manifest.json")->required();
  prepare->add_option("--shard-tokens", options->shard_tokens, "Tokens per shard")
      ->check(integer_in(1))
      ->capture_default_str();
  prepare->add_option("--heldout-tokens", options->heldout_tokens,
                      "Tokens of whole training documents held out for the trainer's loss (0: none)")
      ->check(integer_in(0))
      ->capture_default_str();
  prepare->add_option("--text-column", options->text_column, "The text column of Parquet corpus files")
      ->capture_default_str();
  prepare->add_option("--threads", options->threads, "Encoding threads (0: every core)")
      ->check(thread_count_option())
      ->capture_default_str();
  prepare->add_option("--vocab-size", options->vocab_size,
                      "Vocabulary size of the tokenizer trained when none exists (see --tokenizer)")
      ->check(integer_in(1, std::numeric_limits<int32_t>::max()))
      ->capture_default_str();
  prepare->callback([options] { run_prepare(*options); });

  auto download_options = std::make_shared<DownloadOptions>();
  auto* download = data->add_subcommand(
      "download", "Fetch a dataset's Parquet shards (fineweb-edu, climbmix) or the URLs of a list file, checked");
  download->add_option("source", download_options->source,
                       "fineweb-edu, climbmix, or a file with one \"URL [SHA256]\" per line")
      ->required();
  download->add_option("--shards", download_options->shards, "Shards of a named dataset to fetch: 0 .. N-1");
  download->add_option("--out", download_options->out, "Folder for the files and download-manifest.json")->required();
  download->add_option("--parallel", download_options->settings.parallel, "Transfers at once")
      ->check(integer_in(1, 1024))
      ->capture_default_str();
  download->add_option("--attempts", download_options->settings.attempts, "Attempts per file, the first included")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  download->add_option("--backoff", download_options->settings.backoff_seconds,
                       "Seconds before the first retry (doubling for each later one)")
      ->capture_default_str();
  download->add_option("--timeout", download_options->settings.stall_timeout_seconds,
                       "Seconds without a byte after which a transfer is cut and retried")
      ->capture_default_str();
  download->add_option("--connect-timeout", download_options->settings.connect_timeout_seconds,
                       "Seconds to connect")
      ->capture_default_str();
  download->callback([download_options] { run_download(*download_options); });
}

}  // namespace ct::cli
