// training_state.safetensors of a resumable checkpoint (optimizer state, step counters, loader
// position and recipe in __metadata__), loaded by load_training_checkpoint into a fixed tiny model
// and its optimizer; config.json and model.safetensors beside it are the model's own.
#include "fuzz_models.h"
#include "train/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::TinyTraining& tiny = ct::fuzz::tiny_training();
  ct::fuzz::scratch().write(ct::kTrainingStateFile, ct::fuzz::as_text(data, size));
  ct::fuzz::accept_only_ct_errors([&] {
    (void)ct::load_training_checkpoint(ct::fuzz::scratch().path(), *tiny.model, *tiny.optimizer);
  });
  return 0;
}
