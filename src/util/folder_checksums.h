#pragma once
// SHA256SUMS: the SHA-256 of every file of a folder, recorded when the folder is written and checked
// before a file of it is read, so that a damaged byte anywhere is an error naming the file, not a
// silently different model (docs/formats.md "Checkpoint"). The format is coreutils' own, so
// `sha256sum -c SHA256SUMS` run in the folder checks it too: one line per file,
//   <64 lowercase hex digits><two spaces><file name>\n
// names sorted, plain file names only (no folders, no '/', no control characters, each once).
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace ct {

inline constexpr const char* kChecksumsFile = "SHA256SUMS";

// File name -> lowercase hex SHA-256.
using FolderChecksums = std::map<std::string, std::string>;

// The text of SHA256SUMS for these checksums (sorted by name, as the map is).
std::string folder_checksums_text(const FolderChecksums& checksums);

// Parses SHA256SUMS text. Errors name `where`, the line and what was expected.
FolderChecksums parse_folder_checksums(std::string_view text, const std::string& where);

// Writes dir/SHA256SUMS (atomically) listing every regular file of `dir` but itself: call it last,
// when every other file of the folder is in place.
void write_folder_checksums(const std::filesystem::path& dir);

// Checks `file` against the SHA256SUMS beside it and returns its SHA-256: an error names the file
// when the hash differs, and SHA256SUMS when it does not list the file. A folder without SHA256SUMS
// (a checkpoint written before clocktrain recorded them, or by another tool) is not checked: the hash
// is returned as found.
std::string verify_file_checksum(const std::filesystem::path& file);

}  // namespace ct
