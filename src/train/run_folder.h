#pragma once
// A run folder belongs to one run (docs/train.md, "Run folders").
//
// A run is a lineage: a fresh start draws a random id, every checkpoint carries it (the training
// state's __metadata__ field "lineage") and the folder records it in run_identity.json; a resume
// continues its checkpoint's lineage, in the checkpoint's own folder or in a new one. The trainer
// (rank 0) checks a folder before it writes anything there:
// - a fresh run takes a missing or empty folder, or one whose run left no checkpoint (it failed, was
//   stopped or was killed before its first one): that run's records are moved to <dir>/earlier-<k>/,
//   so nothing is lost and the folder is never locked out;
// - a resume writes into a folder that holds no run, or one of the checkpoint's own lineage whose
//   own checkpoint is not ahead of the one resumed (whose later steps the resume would drop);
// - while a process writes a run folder it holds the folder's lock (run.lock, flock: released when
//   the process ends, however it ends); a second writer is refused, naming the holder's pid. A resume
//   also holds the lock of the checkpoint's own folder while it repairs and reads the checkpoint.
#include <cstdint>
#include <filesystem>
#include <string>

#include "model/config.h"
#include "train/run_layout.h"

namespace ct {

// 128 random bits as 32 lowercase hex digits.
std::string new_lineage();

// The lock of one run folder, held while the object lives. Locks of one folder taken twice by the
// same process nest (`clocktrain run` holds its folder's lock while its trainer takes it again).
class RunFolderLock {
 public:
  RunFolderLock() = default;
  // Creates `dir` when missing and takes its lock; an error naming the folder and the holder's pid
  // when another process holds it.
  explicit RunFolderLock(const std::filesystem::path& dir);
  // The lock of a folder that a trainer has written (one holding run.lock), taken without creating
  // anything (the folder may be read-only); holds nothing for a folder without run.lock, which no
  // trainer of this kind writes.
  static RunFolderLock of_existing(const std::filesystem::path& dir);
  ~RunFolderLock();
  RunFolderLock(RunFolderLock&& other) noexcept;
  RunFolderLock& operator=(RunFolderLock&& other) noexcept;
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

 private:
  // Takes the lock of `dir` (canonical path `key`) through run.lock opened with `open_flags`.
  RunFolderLock(const std::filesystem::path& dir, const std::string& key, int open_flags);
  void release();
  std::string key_;  // the folder's canonical path; empty when nothing is held
};

// A checkpoint's lineage and step, read from its training state's header alone ("" when the
// checkpoint predates lineages; step -1 when it has no readable training state).
struct CheckpointIdentity {
  std::string lineage;
  int64_t step = -1;
};
CheckpointIdentity read_checkpoint_identity(const std::filesystem::path& checkpoint_dir);

// For a fresh run into `dir`, reading only: refuses a folder that holds a checkpoint.
void check_folder_for_fresh_run(const std::filesystem::path& dir);
// The same, in a folder the caller has locked; then moves the records of a run that left no
// checkpoint into <dir>/earlier-<k>/ and returns that folder (empty when there was nothing to move).
std::filesystem::path claim_folder_for_fresh_run(const std::filesystem::path& dir);

// For a resume of `checkpoint_dir` into `dir`, reading only (the trainer checks before and again
// after taking the locks): refuses a folder that holds another lineage's records, or its own
// checkpoint ahead of the one resumed.
void check_folder_for_resume(const std::filesystem::path& dir, const std::filesystem::path& checkpoint_dir,
                             const CheckpointIdentity& checkpoint);

// Fails early when the file system of run folder `dir` lacks room for two checkpoints of a model of
// this shape (the staged one beside the previous one: train/checkpoint.h), counting the space of
// the folder's present checkpoint, which the first new one replaces.
void check_room_for_checkpoints(const std::filesystem::path& dir, const ModelConfig& model);

// Writes <dir>/run_identity.json: the lineage, and the checkpoint a resume continued from (empty for a
// fresh run).
void write_run_identity(const std::filesystem::path& dir, const std::string& lineage,
                        const std::filesystem::path& resumed_from);

}  // namespace ct
