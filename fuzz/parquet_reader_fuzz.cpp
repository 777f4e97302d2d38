// Parquet corpus files (data/parquet_reader.h): any bytes opened as a Parquet file and read to the
// end must give texts or a ct::Error, never a crash. Arrow's own decoder is not built with the
// fuzzer's coverage hooks, so the search is guided by the reader's own code and the seeds
// (fuzz/corpus/parquet_reader/: small files written by pyarrow). The reader's memory budget is set
// to 256 MiB, under the fuzzer's 512 MiB limit on one allocation (scripts/fuzz.sh): a forged page
// header that claims more must be refused by the reader, not allocated.
#include <string>

#include "data/parquet_reader.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!ct::parquet_supported()) return 0;  // a build without Arrow: nothing to fuzz
  try {
    auto reader = ct::ParquetTextReader::from_bytes(std::string(reinterpret_cast<const char*>(data), size),
                                                    "fuzz.parquet",
                                                    ct::kDefaultTextColumn, uint64_t{256} << 20);
    std::string text;
    while (reader.next(text)) {
    }
  } catch (const ct::Error&) {
  }
  return 0;
}
