// clocktrain data prepare: the training corpus and the validation documents into token shards with
// a manifest (docs/data.md).
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "data/prepare.h"
#include "data/text_encoder.h"
#include "text/tokenizer.h"
#include "util/data_dir.h"
#include "util/error.h"

namespace ct::cli {

namespace {

struct PrepareOptions {
  std::string data, tokenizer, out;
  int64_t shard_tokens = PrepareSettings{}.shard_tokens;
  int64_t heldout_tokens = PrepareSettings{}.heldout_tokens;
  int threads = 0;
};

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void run_prepare(const PrepareOptions& options) {
  PrepareSettings settings;
  settings.data_dir = resolve_data_dir(options.data);
  settings.out_dir = options.out;
  settings.shard_tokens = options.shard_tokens;
  settings.heldout_tokens = options.heldout_tokens;
  settings.threads = options.threads;
  std::filesystem::path tokenizer_dir =
      options.tokenizer.empty() ? settings.out_dir / "tokenizer" : std::filesystem::path(options.tokenizer);
  Tokenizer tokenizer = Tokenizer::load(tokenizer_dir);
  auto encoder = tokenizer_encoder(tokenizer);
  PrepareReport report = prepare_data(settings, *encoder);
  // The data folder carries the tokenizer that made it.
  if (!options.tokenizer.empty()) tokenizer.save(settings.out_dir / "tokenizer");

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

}  // namespace

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Prepare token shards from the corpus (docs/data.md)");
  data->require_subcommand(1);
  auto options = std::make_shared<PrepareOptions>();
  auto* prepare = data->add_subcommand("prepare", "Tokenize the corpus into train / heldout / val shards + manifest");
  prepare->add_option("--data", options->data, "Data folder with corpus/ and val/ (default: $CLOCKTRAIN_DATA or ../shared/data)");
  prepare->add_option("--tokenizer", options->tokenizer, "Tokenizer folder (default: OUT/tokenizer)");
  prepare->add_option("--out", options->out, "Output folder for the shards and manifest.json")->required();
  prepare->add_option("--shard-tokens", options->shard_tokens, "Tokens per shard")->capture_default_str();
  prepare->add_option("--heldout-tokens", options->heldout_tokens,
                      "Tokens of whole training documents held out for the trainer's loss (0: none)")
      ->capture_default_str();
  prepare->add_option("--threads", options->threads, "Encoding threads (0: every core)")->capture_default_str();
  prepare->callback([options] { run_prepare(*options); });
}

}  // namespace ct::cli
