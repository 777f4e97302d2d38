#pragma once
// ReadGuard: the record of every file a stage of the run opens, and the refusal of the ones it must
// not read. The trainer's data loader asks the guard before it opens a file; the harness then puts
// the guard's record into the gate's `data` evidence (docs/harness.md: the validation documents and the
// eval bundle are never read by the trainer). The evaluator may use a guard with allowed roots only
// (it reads nothing but the checkpoint and the pinned data).
//
// Paths are compared after resolving symbolic links and `..` (std::filesystem::weakly_canonical),
// so a link into the validation folder is caught. The guard is a check against mistakes in our own
// code, not a sandbox against hostile code: a file swapped between admit() and open() is not caught.
// Thread-safe: loader threads may share one guard.
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "util/data_dir.h"

namespace ct {

class ReadGuard {
 public:
  struct Root {
    std::filesystem::path path;  // canonical
    std::string reason;          // said in the error, e.g. "the pinned validation set"
  };

  ReadGuard() = default;
  ReadGuard(const ReadGuard&) = delete;
  ReadGuard& operator=(const ReadGuard&) = delete;

  // What the trainer's guard refuses: the data folder's val/ and eval_bundle/.
  void forbid_pinned_evaluation_data(const DataLayout& data);

  // Refuses every path under `root` (the root itself included).
  void forbid(const std::filesystem::path& root, const std::string& reason);
  // Once any allowed root is set, every path outside all of them is refused too.
  void allow(const std::filesystem::path& root);

  // Call before opening `path` for reading. Records it and returns its canonical form; throws
  // ct::Error naming the path, the root and the reason when it is refused (the refusal is recorded).
  std::filesystem::path admit(const std::filesystem::path& path);

  // Canonical paths admitted, first-open order, each once.
  std::vector<std::string> opened() const;
  // Paths refused (canonical), in order.
  std::vector<std::string> refused() const;
  std::vector<Root> forbidden_roots() const;
  std::vector<std::filesystem::path> allowed_roots() const;

 private:
  mutable std::mutex mutex_;
  std::vector<Root> forbidden_;
  std::vector<std::filesystem::path> allowed_;
  std::vector<std::string> opened_;
  std::vector<std::string> refused_;
};

// The canonical form used by the guard (symlinks and `..` resolved as far as the path exists).
std::filesystem::path canonical_for_guard(const std::filesystem::path& path);

// True when `path` is `root` or lies under it; both must already be canonical.
bool path_is_under(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace ct
