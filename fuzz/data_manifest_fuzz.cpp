// manifest.json of a prepared data folder: load_manifest (the loader's and the evaluator's entry
// point), then the derived figures and the canonical hash.
#include "data/manifest.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ct::fuzz::scratch().write("manifest.json", ct::fuzz::as_text(data, size));
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::Manifest manifest = ct::load_manifest(path);
    for (const char* split : {"train", "heldout", "val"}) {
      (void)manifest.tokens_of(split);
      (void)manifest.documents_of(split);
      (void)manifest.shards_of(split);
    }
    const std::string hash = ct::manifest_sha256(manifest);
    // The canonical form reads back to the same manifest.
    const ct::Manifest again = ct::manifest_from_json(ct::to_json(manifest), "canonical manifest");
    ct::fuzz::fuzz_require(ct::manifest_sha256(again) == hash, "to_json/manifest_from_json round trip");
  });
  return 0;
}
