// The data pipeline's own cost, without a tokenizer: prepare one shipped corpus file with a
// byte-per-token stand-in encoder (reading, zstd, JSON parsing, hashing, shard writing), and the
// loader's batch assembly. What the tokenizer adds is measured by bench/prepare.sh.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <vector>

#include "data/loader.h"
#include "data/prepare.h"
#include "data/text_encoder.h"
#include "util/data_dir.h"
#include "util/error.h"

namespace {

namespace fs = std::filesystem;

class ByteEncoder : public ct::TextEncoder {
 public:
  void encode_append(std::string_view text, std::vector<int32_t>& out) const override {
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(text.data()),
               reinterpret_cast<const uint8_t*>(text.data()) + text.size());
  }
  int32_t bos_id() const override { return 256; }
  int64_t vocab_size() const override { return 257; }
  std::string sha256() const override { return std::string(64, 'b'); }
};

// A data folder holding only the last (smallest) corpus file and the val file, by symlink.
fs::path small_data_folder() {
  fs::path data = ct::resolve_data_dir("");
  fs::path dir = fs::temp_directory_path() / "clocktrain-bench-data";
  fs::remove_all(dir);
  fs::create_directories(dir / "corpus");
  fs::create_directories(dir / "val");
  fs::create_symlink(data / "corpus" / "train_010.jsonl.zst", dir / "corpus" / "train_010.jsonl.zst");
  fs::create_symlink(data / "val" / "val_000.jsonl.zst", dir / "val" / "val_000.jsonl.zst");
  return dir;
}

void BM_PrepareWithoutTokenizer(benchmark::State& state) {
  fs::path data = small_data_folder();
  ByteEncoder encoder;
  ct::PrepareSettings settings;
  settings.data_dir = data;
  settings.out_dir = fs::temp_directory_path() / "clocktrain-bench-out";
  settings.threads = static_cast<int>(state.range(0));
  settings.progress = false;
  uint64_t bytes = 0;
  for (auto _ : state) bytes += ct::prepare_data(settings, encoder).text_bytes;
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  fs::remove_all(settings.out_dir);
  fs::remove_all(data);
}
BENCHMARK(BM_PrepareWithoutTokenizer)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LoaderBatch(benchmark::State& state) {
  fs::path data = small_data_folder();
  ByteEncoder encoder;
  ct::PrepareSettings settings;
  settings.data_dir = data;
  settings.out_dir = fs::temp_directory_path() / "clocktrain-bench-out";
  settings.progress = false;
  ct::prepare_data(settings, encoder);
  const int64_t B = 32, T = 1024;
  ct::TokenLoader loader(settings.out_dir, "train", B, T, 1);
  std::vector<int32_t> inputs, targets;
  for (auto _ : state) loader.next_batch(inputs, targets);
  state.SetItemsProcessed(state.iterations() * B * T);
  fs::remove_all(settings.out_dir);
  fs::remove_all(data);
}
BENCHMARK(BM_LoaderBatch)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
