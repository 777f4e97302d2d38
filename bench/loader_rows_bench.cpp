// The trainer's training rows of a prepared data folder, printed (not timed): for each of the first
// BATCHES batches of TokenLoader (data/loader.h, rank 0 of 1), one line "batch b: t0 t1 ... sum" with
// the first input token of each row and the sum of all the batch's input tokens. bench/token_rows.py
// ports the loader to Python for the PyTorch side of bench/quality_per_clock.sh;
// bench/torch2_parity_check.py rows compares that port's lines with these. (In bench/ because
// *_bench.cpp is what the bench folder builds; it links the data library only.)
//
//   loader_rows_bench DATA_DIR SEQ_LEN BATCH_ROWS SEED BATCHES
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/loader.h"
#include "util/error.h"

int main(int argc, char** argv) {
  try {
    ct::check(argc == 6, "usage: loader_rows_bench DATA_DIR SEQ_LEN BATCH_ROWS SEED BATCHES");
    const int64_t seq_len = std::stoll(argv[2]), batch_rows = std::stoll(argv[3]), batches = std::stoll(argv[5]);
    ct::TokenLoader loader(argv[1], "train", batch_rows, seq_len, std::stoull(argv[4]));
    std::vector<int32_t> inputs, targets;
    for (int64_t b = 0; b < batches; ++b) {
      loader.next_batch(inputs, targets);
      std::string line = "batch " + std::to_string(b) + ":";
      int64_t sum = 0;
      for (int32_t t : inputs) sum += t;
      for (int64_t r = 0; r < batch_rows; ++r) line += " " + std::to_string(inputs[static_cast<size_t>(r * seq_len)]);
      std::printf("%s %lld\n", line.c_str(), static_cast<long long>(sum));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_rows_bench: %s\n", e.what());
    return 1;
  }
}
