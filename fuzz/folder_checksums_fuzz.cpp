// SHA256SUMS of a checkpoint folder, through parse_folder_checksums (what verify_file_checksum reads
// before any file of the folder). An accepted file's canonical text parses back to the same checksums.
#include "fuzz_support.h"
#include "util/folder_checksums.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ct::fuzz::accept_only_ct_errors([&] {
    const ct::FolderChecksums checksums = ct::parse_folder_checksums(ct::fuzz::as_text(data, size), "SHA256SUMS");
    ct::fuzz::fuzz_require(ct::parse_folder_checksums(ct::folder_checksums_text(checksums), "SHA256SUMS") == checksums,
                           "folder_checksums_text round trip");
  });
  return 0;
}
