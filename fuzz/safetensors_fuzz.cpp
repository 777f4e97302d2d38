// safetensors files (checkpoints, training state): SafetensorsFile validates the header (length,
// JSON, dtypes, shapes, offsets) before any tensor is read; then every tensor is read. A header
// that claims more bytes than the file has must be refused, not allocated.
#include <vector>

#include "fuzz_support.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ct::fuzz::scratch().write("weights.safetensors", ct::fuzz::as_text(data, size));
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::SafetensorsFile file(path);
    std::vector<char> bytes;
    uint64_t total = 0;
    for (const ct::SafetensorsEntry& e : file.entries()) {
      ct::fuzz::fuzz_require(e.end - e.begin <= size, "a tensor fits in the file");
      total += e.end - e.begin;
      bytes.resize(e.end - e.begin);
      file.read(e, bytes.data());
      ct::fuzz::fuzz_require(file.find(e.name) != nullptr, "find() finds every entry");
    }
    ct::fuzz::fuzz_require(total <= size, "tensors do not overlap");
    for (const auto& [key, value] : file.metadata()) ct::fuzz::fuzz_require(file.metadata_value(key) == value, "metadata");
  });
  return 0;
}
