// CSV text (util/csv.h, used for eval_meta_data.csv): every row has as many fields as the header.
#include "fuzz_support.h"
#include "util/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::CsvTable table = ct::parse_csv(ct::fuzz::as_text(data, size), "table.csv");
    ct::fuzz::fuzz_require(table.rows.size() == table.row_lines.size(), "a line per row");
    for (const auto& row : table.rows) ct::fuzz::fuzz_require(row.size() == table.header.size(), "rows as wide as the header");
    if (!table.header.empty()) (void)table.column(table.header.back());
  });
  return 0;
}
