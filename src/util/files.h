#pragma once
// Whole-file reads and atomic writes. An atomic write goes to a temporary name in the same folder,
// is fsynced, then renamed over the final name (and the folder fsynced), so a crash or a full disk
// never leaves a half-written file under the final name and never harms the previous version.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ct {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path);
std::vector<uint8_t> read_file_bytes(const fs::path& path);

// Writes `contents` to `path` atomically. Throws ct::Error naming the path on any failure,
// after removing the temporary file; the previous file at `path` is untouched.
void write_file_atomic(const fs::path& path, std::string_view contents);

// Streams a large file: `fill` writes through the given writer; same guarantees as above.
class AtomicWriter {
 public:
  explicit AtomicWriter(fs::path final_path);
  ~AtomicWriter();  // removes the temporary file unless commit() succeeded
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;

  void write(const void* data, size_t bytes);
  void write(std::string_view s) { write(s.data(), s.size()); }
  uint64_t bytes_written() const { return bytes_written_; }
  void commit();  // fsync, close, rename, fsync the folder

 private:
  fs::path final_path_, temp_path_;
  int fd_ = -1;
  uint64_t bytes_written_ = 0;
  bool committed_ = false;
};

// Creates the folder (and parents); a clear error if it cannot.
void ensure_directory(const fs::path& dir);

// Fails before the work whose output would be lost: creates `dir` when missing, then creates and
// removes a probe file in it. The error names `what` (e.g. "--out"), the folder and the system's
// reason (Read-only file system, Permission denied, No space left on device).
void check_writable_folder(const fs::path& dir, const std::string& what);
// The same for the folder an output file goes to (the current folder for a bare name); "" passes.
// The error names the option and the file ("--out runs/x/bpb.json: ...").
void check_out_file_writable(const std::string& option, const std::string& file);

// Bytes an unprivileged writer may still use on the file system holding `path` (statvfs f_bavail),
// or of its nearest existing parent when `path` does not exist yet.
uint64_t free_bytes(const fs::path& path);

}  // namespace ct
