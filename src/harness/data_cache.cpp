#include "harness/data_cache.h"

#include <unistd.h>

#include "data/corpus_reader.h"
#include "data/prepare.h"
#include "data/prepared_folder.h"
#include "data/text_encoder.h"
#include "data/tokenizer_training.h"
#include "text/bpe_trainer.h"
#include "text/tokenizer.h"
#include "util/clock.h"
#include "util/data_dir.h"
#include "util/error.h"
#include "util/files.h"
#include "util/progress.h"
#include "util/read_guard.h"
#include "util/sha256.h"
#include "util/text_format.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKeyFormat = "clocktrain-prepared/1";

BpeTrainerOptions tokenizer_options(const DataCacheSettings& s) {
  BpeTrainerOptions options;
  options.vocab_size = s.vocab_size;
  options.threads = s.threads;
  return options;
}

// The corpus files, after checking that neither the folder nor any file resolves into the pinned
// evaluation data (a corpus/ that is a link to val/ would otherwise train on the validation set).
std::vector<fs::path> training_corpus_files(const fs::path& data_dir) {
  const DataLayout layout{data_dir};
  check(fs::is_directory(layout.corpus()), layout.corpus().string(), ": no corpus folder (expected ",
        data_dir.string(), " to hold corpus/, the training text)");
  std::vector<std::pair<fs::path, std::string>> forbidden = {{canonical_for_guard(layout.val()), "the validation set"},
                                                             {canonical_for_guard(layout.eval_bundle()), "the eval bundle"}};
  std::vector<fs::path> files = list_corpus_files(layout.corpus());
  std::vector<fs::path> checked = files;
  checked.push_back(layout.corpus());
  for (const auto& f : checked) {
    const fs::path canonical = canonical_for_guard(f);
    for (const auto& [root, what] : forbidden)
      check(!path_is_under(canonical, root), f.string(), ": resolves to ", canonical.string(), ", inside ", what, " (",
            root.string(), "): training data is never prepared from it");
  }
  check(!files.empty(), layout.corpus().string(), ": holds no corpus files (*.jsonl, *.jsonl.zst, *.jsonl.gz, *.txt)");
  return files;
}

Json prepared_record(const PreparedData& p) {
  return Json{{"format", kKeyFormat},
              {"key", p.key},
              {"key_inputs", p.key_inputs},
              {"manifest_sha256", p.pinned_manifest_sha256},
              {"manifest", to_json(p.pinned)}};
}

// Reads CACHE/<key>/prepared.json into `p` (the pin); errors name the file.
void read_prepared_record(PreparedData& p) {
  const fs::path path = p.dir / kPreparedRecordFileName;
  const Json j = read_json_file(path);
  check(j.is_object() && j.value("format", "") == kKeyFormat, path.string(), ": field 'format': expected \"",
        kKeyFormat, "\"");
  check(j.value("key", "") == p.key, path.string(), ": field 'key': expected ", p.key, " (the folder's name)");
  check(j.contains("manifest"), path.string(), ": field 'manifest': missing");
  p.pinned = manifest_from_json(j.at("manifest"), path.string() + ": manifest");
  p.pinned_manifest_sha256 = manifest_sha256(p.pinned);
}

// Moves `dir` out of the way in one rename (so no run can find it half removed), then removes it.
// A folder already gone was set aside by another run.
void set_aside(const fs::path& dir, const fs::path& aside) {
  std::error_code ec;
  fs::rename(dir, aside, ec);
  if (ec) {
    check(!fs::exists(dir), "cannot move the damaged ", dir.string(), " to ", aside.string(), ": ", ec.message());
    return;
  }
  fs::remove_all(aside, ec);
}

}  // namespace

Json data_cache_key_inputs(const DataCacheSettings& s) {
  Json corpus = Json::array();
  for (const auto& f : training_corpus_files(s.data_dir))
    corpus.push_back({{"name", f.filename().string()}, {"bytes", fs::file_size(f)}, {"sha256", sha256_file(f)}});
  const BpeTrainerOptions t = tokenizer_options(s);
  return Json{{"format", kKeyFormat},
              {"corpus", corpus},
              {"prepare", {{"shard_tokens", s.shard_tokens}, {"heldout_tokens", s.heldout_tokens}}},
              {"tokenizer",
               {{"vocab_size", t.vocab_size},
                {"special_tokens", t.special_tokens},
                {"doc_cap", t.doc_cap},
                {"max_chars", t.max_chars}}}};
}

PreparedData ensure_prepared_data(const DataCacheSettings& s, std::ostream& log) {
  Stopwatch clock;
  PreparedData p;
  p.key_inputs = data_cache_key_inputs(s);
  p.key = sha256_hex(p.key_inputs.dump());
  p.dir = s.cache_dir / p.key;
  if (fs::exists(p.dir)) {
    try {
      read_prepared_record(p);
      verify_prepared_folder(p.dir, p.pinned);
      p.reused = true;
      p.seconds = clock.seconds();
      log << "data: reusing the prepared data " << p.dir.string() << " (cache key " << p.key.substr(0, 12)
          << ", manifest " << p.pinned_manifest_sha256.substr(0, 12) << ")\n"
          << std::flush;
      return p;
    } catch (const Error& damage) {
      // The cache is clocktrain's own derived data: a damaged folder is made again, not repaired.
      log << "data: the prepared data " << p.dir.string() << " is damaged, so it is prepared again: " << damage.what()
          << "\n"
          << std::flush;
      set_aside(p.dir, s.cache_dir / (".damaged-" + p.key.substr(0, 12) + "-" + std::to_string(::getpid())));
    }
  }

  // Stage everything beside the final folder; a failure leaves the cache as it was.
  ensure_directory(s.cache_dir);
  const fs::path staging = s.cache_dir / (".staging-" + p.key.substr(0, 12) + "-" + std::to_string(::getpid()));
  fs::remove_all(staging);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{staging};
  // A view of the data folder that holds corpus/ only: preparation cannot reach val/ or eval_bundle/.
  const fs::path view = staging / "view";
  fs::create_directories(view);
  fs::create_directory_symlink(fs::absolute(DataLayout{s.data_dir}.corpus()), view / "corpus");
  const fs::path out = staging / "prepared";

  log << "data: preparing " << DataLayout{s.data_dir}.corpus().string() << " into " << p.dir.string()
      << " (cache key " << p.key.substr(0, 12) << "): training a tokenizer of " << s.vocab_size
      << " tokens, then the shards\n"
      << std::flush;
  ProgressLine progress;
  Tokenizer tokenizer = train_tokenizer_on_corpus(list_corpus_files(view / "corpus"), tokenizer_options(s),
                                                  [&](const std::string& line) {
                                                    if (s.progress) progress.update(line);
                                                  });
  progress.finish();
  check(tokenizer.vocab_size() == s.vocab_size, DataLayout{s.data_dir}.corpus().string(),
        ": the tokenizer trained on it has ", tokenizer.vocab_size(), " tokens, not the recipe's model.vocab_size ",
        s.vocab_size, " (the corpus is too small for that many merges)");
  PrepareSettings settings;
  settings.data_dir = view;
  settings.out_dir = out;
  settings.shard_tokens = s.shard_tokens;
  settings.heldout_tokens = s.heldout_tokens;
  settings.threads = s.threads;
  settings.progress = s.progress;
  auto encoder = tokenizer_encoder(tokenizer);
  PrepareReport report = prepare_data(settings, *encoder);
  tokenizer.save(out / "tokenizer");
  p.pinned = report.manifest;
  p.pinned_manifest_sha256 = report.manifest_sha256;
  write_file_atomic(out / kPreparedRecordFileName, prepared_record(p).dump(2) + "\n");

  std::error_code ec;
  fs::rename(out, p.dir, ec);
  if (ec) {
    // Another run prepared the same key meanwhile: use theirs (same inputs, same bytes).
    check(fs::exists(p.dir / kPreparedRecordFileName), "cannot move ", out.string(), " to ", p.dir.string(), ": ",
          ec.message());
    read_prepared_record(p);
    p.reused = true;
  }
  p.seconds = clock.seconds();
  log << "data: prepared in " << format_seconds(clock.seconds()) << ": " << p.pinned.shards_of("train").size() << " train shard(s), "
      << p.pinned.tokens_of("train") << " tokens; " << p.pinned.tokens_of("heldout") << " held-out tokens; manifest "
      << p.pinned_manifest_sha256.substr(0, 12) << "\n"
      << std::flush;
  return p;
}

}  // namespace ct
