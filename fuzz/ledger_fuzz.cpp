// The lab's SQLite ledger: a ledger file from elsewhere is opened (schema version and migrations
// checked) and every table is read back through the Ledger API, results parsed.
#include "fuzz_support.h"
#include "lab/ledger.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ct::fuzz::scratch().write("lab.sqlite", ct::fuzz::as_text(data, size));
  for (const char* leftover : {"lab.sqlite-journal", "lab.sqlite-wal", "lab.sqlite-shm"})
    std::filesystem::remove(ct::fuzz::scratch().path() / leftover);
  ct::fuzz::accept_only_ct_errors([&] {
    ct::lab::Ledger ledger(path, /*create=*/false);
    for (const ct::lab::Experiment& e : ledger.experiments()) {
      (void)ledger.checks(e.id);
      (void)ledger.rung_passed(e.id, ct::lab::Rung::full);
    }
    (void)ledger.runs();
    (void)ledger.verdicts();
  });
  return 0;
}
