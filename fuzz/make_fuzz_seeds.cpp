// Writes the seed corpora under fuzz/corpus/<target>/ with clocktrain's own writers, so that every
// seed is a valid file of the current format (scripts/make-fuzz-seeds.sh runs it; the seeds are
// committed). Small on purpose: the fuzzers mutate them, and a small input runs fast.
//   make_fuzz_seeds OUT_DIR
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <zlib.h>
#include <zstd.h>

#include "data/loader.h"
#include "data/manifest.h"
#include "data/shard.h"
#include "fuzz_models.h"
#include "lab/ledger.h"
#include "model/safetensors.h"
#include "text/bpe_trainer.h"
#include "text/tokenizer.h"
#include "train/checkpoint.h"
#include "train/metrics_writer.h"
#include "train/recipe.h"
#include "util/error.h"
#include "util/files.h"
#include "util/folder_checksums.h"
#include "util/sha256.h"

namespace fs = std::filesystem;

namespace {

fs::path out_root;
const fs::path source_dir = CLOCKTRAIN_SOURCE_DIR_FOR_SEEDS;

void write_seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = out_root / target;
  ct::ensure_directory(dir);
  ct::write_file_atomic(dir / name, bytes);
  std::printf("%-28s %-32s %7zu bytes\n", target.c_str(), name.c_str(), bytes.size());
}

// A tokenizer of 256 bytes + a few dozen merges: small files, every code path of loading.
ct::Tokenizer tiny_tokenizer() {
  ct::BpeTrainerOptions options;
  options.vocab_size = 300;
  options.special_tokens = {"<|bos|>", "<|end|>"};
  options.threads = 1;
  ct::BpeTrainer trainer(options);
  for (int i = 0; i < 20; ++i)
    trainer.add_document("the theory of the thing: there, then, these " + std::to_string(i * 37) +
                         " caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\n");
  return trainer.train();
}

// The two tokenizer files as saved, as the tokenizer targets take them.
struct TokenizerFiles {
  std::string tiktoken, json;
};

TokenizerFiles saved_files(const ct::Tokenizer& tokenizer, const fs::path& scratch) {
  tokenizer.save(scratch);
  return {ct::read_file(scratch / "tokenizer.tiktoken"), ct::read_file(ct::tokenizer_json_path(scratch))};
}

void text_seeds(const fs::path& scratch) {
  const TokenizerFiles files = saved_files(tiny_tokenizer(), scratch / "tokenizer");
  write_seed("tokenizer_files", "tiny_300.bin", files.tiktoken + std::string(1, '\0') + files.json);

  write_seed("tokenizer_encode", "ascii.txt", "Hello, world! It's 2024. I'll say: 'we've 12345 DON'T'.\n");
  write_seed("tokenizer_encode", "unicode.txt",
             "Caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xd0\x9f\xd1\x80\xd0\xb8 \xf0\x9f\x98\x80 "
             "\xc5\xbft \xe2\x80\xa8x\xc2\xa0y\xe3\x80\x80z \xd9\xa3\xd9\xa4 \xe2\x85\xab\n");
  write_seed("tokenizer_encode", "spaces.txt", "a  b\t\tc \n\n  \r\n\r\n   d   \n\x0b\x0c  e    ");
  write_seed("tokenizer_encode", "invalid_utf8.txt",
             "ok \xff\xfe \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82 end\x80");

  write_seed("json_text", "tokenizer.json", files.json);
  write_seed("json_text", "values.json",
             R"({"a": [1, -2.5e-3, 1e308, true, false, null], "s": "esc \" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00",)"
             R"( "nested": {"x": [[[]]], "y": {}}, "big": 18446744073709551615, "neg": -9223372036854775808})");
}


// Repository files that are hand-made valid examples (test fixtures, recipes), copied as seeds.
void copy_seed(const std::string& target, const std::string& name, const fs::path& relative_to_source,
               const std::string& prefix = "") {
  write_seed(target, name, prefix + ct::read_file(source_dir / relative_to_source));
}

std::string zstd_compress(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  ct::check(!ZSTD_isError(n), "zstd: ", ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

std::string gzip_compress(const std::string& text) {
  z_stream z{};
  ct::check(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "zlib: deflateInit2");
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  ct::check(rc == Z_STREAM_END, "zlib: deflate");
  out.resize(z.total_out);
  return out;
}

void data_seeds(const fs::path& scratch) {
  const std::string jsonl =
      "{\"text\": \"The first document.\\nIt has two lines.\", \"id\": 1, \"source\": \"fuzz\"}\n"
      "{\"text\": \"Caf\\u00e9 \\ud83d\\ude00 \\\"quoted\\\" \\\\ tab\\t\", \"meta\": {\"lang\": [\"fr\", null], \"score\": 0.5}}\n"
      "\n"
      "{\"text\": \"\"}\r\n"
      "{\"id\": 4, \"text\": \"last line without a newline\"}";
  write_seed("corpus_jsonl", "docs.jsonl", jsonl);
  write_seed("corpus_jsonl", "plain.txt", "Just a text document.\nNo JSON here.\n");
  write_seed("corpus_zst", "docs.jsonl.zst", zstd_compress(jsonl));
  write_seed("corpus_zst", "empty.jsonl.zst", zstd_compress(""));
  write_seed("corpus_gz", "docs.jsonl.gz", gzip_compress(jsonl));

  ct::ensure_directory(scratch / "data");
  std::vector<int32_t> small_ids, large_ids;
  for (int i = 0; i < 40; ++i) small_ids.push_back((i * 37) % 300);
  for (int i = 0; i < 12; ++i) large_ids.push_back(65536 + i * 1000);
  const ct::WrittenShard train = ct::write_shard(scratch / "data/train_000.bin", small_ids, 1);
  const ct::WrittenShard wide = ct::write_shard(scratch / "data/train_001.bin", large_ids, 2);
  write_seed("token_shard", "v1_uint16.bin", ct::read_file(scratch / "data/train_000.bin"));
  write_seed("token_shard", "v2_uint32.bin", ct::read_file(scratch / "data/train_001.bin"));
  write_seed("token_shard", "v1_empty.bin", [&] {
    ct::write_shard(scratch / "data/empty.bin", {}, 1);
    return ct::read_file(scratch / "data/empty.bin");
  }());

  ct::Manifest manifest;
  manifest.tokenizer_sha256 = ct::sha256_hex("tokenizer");
  manifest.vocab_size = 300;
  manifest.bos_id = 298;
  manifest.shard_version = 1;
  manifest.settings = {{"heldout_documents", 1}, {"shard_tokens", 100000}};
  manifest.summary = {{"train", {{"documents", 3}, {"text_bytes", 120}}}};
  manifest.sources = {{"corpus/train_000.jsonl.zst", "train", 1234, ct::sha256_hex("source")},
                      {"val/val_000.jsonl.zst", "val", 99, ct::sha256_hex("val")}};
  manifest.shards = {{"train_000.bin", "train", train.tokens, 2, train.bytes, train.sha256},
                     {"heldout_000.bin", "heldout", wide.tokens, 1, wide.bytes, wide.sha256},
                     {"val_000.bin", "val", 5, 1, 1034, ct::sha256_hex("val shard")}};
  ct::save_manifest(manifest, scratch / "data/manifest.json");
  (void)ct::load_manifest(scratch / "data/manifest.json");
  write_seed("data_manifest", "manifest.json", ct::read_file(scratch / "data/manifest.json"));

  ct::LoaderState state{"train", 42, 8, ct::sha256_hex("manifest"), 2, 17, 30};
  write_seed("loader_state", "state.json", ct::to_json(state).dump());
}

void model_seeds(const fs::path& scratch) {
  ct::SafetensorsWriter writer;
  const std::vector<float> f32 = {1.5f, -2.0f, 0.0f, 3.25f, 1e-3f, -7.0f};
  const std::vector<int32_t> i32 = {1, -2, 3, 2147483647};
  const std::vector<uint16_t> bf16 = {0x3f80, 0xbf80, 0x0000, 0x7f80};
  const std::vector<double> f64 = {3.141592653589793};
  writer.add("weights.matrix", "F32", {2, 3}, f32.data());
  writer.add("counts", "I32", {4}, i32.data());
  writer.add("half", "BF16", {2, 2}, bf16.data());
  writer.add("scalar", "F64", {}, f64.data());
  writer.add("empty", "F32", {0, 5}, nullptr);
  writer.set_metadata("format", "fuzz-seed/1");
  writer.set_metadata("step", "12");
  writer.write(scratch / "mixed.safetensors");
  (void)ct::SafetensorsFile(scratch / "mixed.safetensors");
  write_seed("safetensors", "mixed.safetensors", ct::read_file(scratch / "mixed.safetensors"));

  ct::fuzz::TinyTraining tiny = ct::fuzz::make_tiny_training();
  const fs::path checkpoint = scratch / "checkpoint";
  ct::CheckpointContents contents;
  contents.progress = {5, 320, 12.5, 1.25, 0};
  contents.loader_state = ct::to_json(ct::LoaderState{"train", 42, 8, ct::sha256_hex("manifest"), 0, 40, 5});
  ct::Recipe recipe;
  recipe.model = ct::fuzz::tiny_model_config();
  contents.recipe = ct::to_json(recipe);
  contents.recipe_sha256 = ct::recipe_hash(recipe);
  ct::save_training_checkpoint(checkpoint, *tiny.model, *tiny.optimizer, contents, {});
  (void)ct::load_training_checkpoint(checkpoint, *tiny.model, *tiny.optimizer);
  const std::string config = ct::read_file(checkpoint / ct::kModelConfigFile);
  const std::string weights = ct::read_file(checkpoint / ct::kModelWeightsFile);
  write_seed("safetensors", "tiny_model.safetensors", weights);
  write_seed("model_config", "tiny_config.json", config);
  write_seed("model_config", "baseline_config.json", ct::to_json(ct::ModelConfig{}).dump(2));
  write_seed("model_checkpoint", "tiny_model.bin", config + std::string(1, '\0') + weights);
  write_seed("training_state", "tiny_training_state.safetensors", ct::read_file(checkpoint / ct::kTrainingStateFile));
  write_seed("folder_checksums", "SHA256SUMS", ct::read_file(checkpoint / ct::kChecksumsFile));

  for (const char* name : {"baseline.toml", "cpu-small.toml", "tiny.toml"})
    copy_seed("recipe", name, fs::path("recipes") / name);

  {
    ct::MetricsWriter log(scratch / "metrics.jsonl");
    for (int step = 1; step <= 6; ++step) {
      log.write(ct::OrderedJson{{"kind", "train"}, {"step", step}, {"tokens", step * 64},
                                {"clock_seconds", 0.5 * step}, {"loss", 5.0 - 0.1 * step}, {"lr_factor", 1.0},
                                {"grad_norm", 0.7}, {"tokens_per_second", 1000.0}, {"flops_per_second", 1e9},
                                {"mfu", 0.2}, {"step_seconds", 0.5}});
      if (step == 2) log.event(step, 0.0, "clock_start", "startup 1.0 s");
      if (step % 3 == 0)
        log.write(ct::OrderedJson{{"kind", "eval"}, {"step", step}, {"tokens", step * 64},
                                  {"clock_seconds", 0.5 * step}, {"split", "heldout"}, {"loss", 5.1 - 0.1 * step}});
    }
    log.event(6, 3.0, "stop", "budget");
  }
  const std::string metrics = ct::read_file(scratch / "metrics.jsonl");
  write_seed("metrics_resume", "metrics.jsonl", metrics + "{\"kind\": \"train\", \"step\": 7, \"lo");
  write_seed("metrics_jsonl", "metrics.jsonl", metrics);
}

void eval_seeds() {
  const fs::path bundle = "tests/data/core_small";
  write_seed("core_bundle", "core_small.bin",
             ct::read_file(source_dir / bundle / "core.yaml") + std::string(1, '\0') +
                 ct::read_file(source_dir / bundle / "eval_meta_data.csv"));
  copy_seed("core_rows", "mc.bin", bundle / "eval_data/mc/mc_default.jsonl", std::string(1, '\0'));
  copy_seed("core_rows", "schema.bin", bundle / "eval_data/schema/schema_shots.jsonl", std::string(1, '\1'));
  copy_seed("core_rows", "lm.bin", bundle / "eval_data/lm/lm_default.jsonl", std::string(1, '\2'));
  copy_seed("csv", "eval_meta_data.csv", bundle / "eval_meta_data.csv");
  write_seed("csv", "quoted.csv",
             "\xef\xbb\xbf" "name,\"with, comma\",value\r\n"
             "a,\"line\nbreak\",1\r\n"
             "\"doubled \"\"quotes\"\"\",x\"y,2\n"
             "\n"
             "last,,3");
}

void harness_lab_seeds(const fs::path& scratch) {
  for (const char* name : {"round1/a.json", "round2/p.json"}) {
    const std::string seed_name = fs::path(name).parent_path().string() + "_" + fs::path(name).filename().string();
    copy_seed("result_json", seed_name, fs::path("tests/data/results") / name);
    copy_seed("run_record", seed_name, fs::path("tests/data/results") / name);
  }
  for (const auto& [name, rule] : std::vector<std::pair<std::string, std::string>>{
           {"basic.txt", "accept if mean(B) - mean(A) < -0.005 at 95%"},
           {"metric.txt", "ACCEPT IF mean(fast.core) - mean(base.core) >= 0.002"},
           {"spaces.txt", "accept if mean( B.val_bpb )-mean(A)<=-1e-3 at 99.5 %"}})
    write_seed("decision_rule", name, rule);

  // A ledger with an experiment, ladder checks, runs and a verdict, made through the Ledger API.
  const fs::path ledger_path = scratch / "lab.sqlite";
  {
    ct::lab::Ledger ledger(ledger_path, true);
    ct::lab::NewExperiment e;
    e.change = "n_layer 4 -> 6";
    e.hypothesis = "a deeper model reaches lower val_bpb in the same budget";
    e.predicted_effect = -0.01;
    e.predicted_low = -0.02;
    e.predicted_high = 0.0;
    e.rule_text = "accept if mean(B) - mean(A) < -0.005 at 95%";
    e.declared = {"recipe.model.n_layer"};
    const int64_t id = ledger.add_experiment(e);
    ct::lab::LadderCheck check;
    check.experiment_id = id;
    check.rung = ct::lab::Rung::cpu_check;
    check.command = "ctest -R model";
    check.passed = true;
    check.output_tail = "100% tests passed";
    ledger.add_check(check);
    const fs::path run_dir = scratch / "run_probe";
    ct::ensure_directory(run_dir);
    std::string result = ct::read_file(source_dir / "tests/data/results/round1/a.json");
    ct::write_file_atomic(run_dir / "result.json", result);
    ledger.add_run(id, "A", ct::lab::Rung::probe, ct::lab::read_run_record(run_dir), {});
    ledger.add_verdict(id, "inconclusive", ct::lab::Rung::probe, ct::Json{{"effect", -0.001}, {"runs", 1}});
  }
  { ct::lab::Ledger reopened(ledger_path, false); }
  write_seed("ledger", "lab.sqlite", ct::read_file(ledger_path));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR (fuzz/corpus)\n", argv[0]);
    return 2;
  }
  out_root = argv[1];
  const fs::path scratch = fs::temp_directory_path() / ("clocktrain-seeds-" + std::to_string(::getpid()));
  try {
    text_seeds(scratch);
    data_seeds(scratch);
    model_seeds(scratch);
    eval_seeds();
    harness_lab_seeds(scratch);
  } catch (const ct::Error& e) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
    fs::remove_all(scratch);
    return 1;
  }
  fs::remove_all(scratch);
  return 0;
}
