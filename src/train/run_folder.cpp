#include "train/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "model/safetensors.h"
#include "train/checkpoint.h"
#include "train/metrics_writer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"
#include "util/text_format.h"

namespace ct {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRunIdentityFormat = "clocktrain-run-identity/1";

// What a run leaves in its folder (train/trainer.h); anything else there is not the trainer's.
const std::vector<std::string>& run_record_names() {
  static const std::vector<std::string> names = {kMetricsFileName, kTensorBoardDir, kTrainSummaryFile,
                                                 kRunIdentityFile, kCheckpointDir,  kCheckpointOldDir};
  return names;
}

std::vector<std::string> records_in(const fs::path& dir) {
  std::vector<std::string> present;
  std::error_code ec;
  for (const std::string& name : run_record_names())
    if (fs::exists(dir / name, ec)) present.push_back(name);
  return present;
}

bool holds_checkpoint(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kCheckpointDir, ec) || fs::exists(dir / kCheckpointOldDir, ec);
}

// The folder's checkpoint: checkpoint/, or checkpoint.old where a crash between a checkpoint write's
// two renames left only that (train/checkpoint.h).
CheckpointIdentity folder_checkpoint_identity(const fs::path& dir) {
  std::error_code ec;
  return read_checkpoint_identity(fs::exists(dir / kCheckpointDir, ec) ? dir / kCheckpointDir : dir / kCheckpointOldDir);
}

// The folder's lineage: run_identity.json's, else its checkpoint's ("" when neither tells).
std::string folder_lineage(const fs::path& dir) {
  const fs::path identity = dir / kRunIdentityFile;
  if (fs::exists(identity)) {
    const Json j = read_json_file(identity);
    return json_field<std::string>(j, "lineage", identity.string());
  }
  return folder_checkpoint_identity(dir).lineage;
}

std::string describe(const std::string& lineage, int64_t step) {
  std::string text = lineage.empty() ? std::string("lineage not recorded") : "lineage " + lineage.substr(0, 12);
  if (step >= 0) text += str(", step ", step);
  return text;
}

// The locks this process holds: folder (canonical path) -> descriptor and nesting depth.
struct HeldLock {
  int fd = -1;
  int depth = 0;
};
std::mutex g_locks_mutex;
std::map<std::string, HeldLock>& held_locks() {
  static std::map<std::string, HeldLock> locks;
  return locks;
}

}  // namespace

std::string new_lineage() {
  unsigned char bytes[16];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    check(n > 0 || errno == EINTR, "cannot draw a run lineage id: getrandom: ", std::strerror(errno));
    if (n > 0) filled += static_cast<size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

RunFolderLock::RunFolderLock(const fs::path& dir) {
  ensure_directory(dir);
  std::error_code ec;
  const std::string key = fs::canonical(dir, ec).string();
  check(!ec, dir.string(), ": cannot resolve the run folder: ", ec.message());
  *this = RunFolderLock(dir, key, O_RDWR | O_CREAT);
}

RunFolderLock RunFolderLock::of_existing(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / kRunLockFile, ec)) return RunFolderLock();
  const std::string key = fs::canonical(dir, ec).string();
  check(!ec, dir.string(), ": cannot resolve the run folder: ", ec.message());
  return RunFolderLock(dir, key, O_RDONLY);  // flock needs no write access
}

RunFolderLock::RunFolderLock(const fs::path& dir, const std::string& key, int open_flags) {
  std::lock_guard<std::mutex> guard(g_locks_mutex);
  auto& locks = held_locks();
  if (auto it = locks.find(key); it != locks.end()) {
    ++it->second.depth;
    key_ = key;
    return;
  }
  const fs::path path = dir / kRunLockFile;
  const int fd = ::open(path.c_str(), open_flags | O_CLOEXEC, 0644);
  check(fd >= 0, path.string(), ": cannot open the run folder's lock: ", std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[32] = {};
    const ssize_t n = ::pread(fd, holder, sizeof(holder) - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : std::string("unknown");
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    check(error != EWOULDBLOCK, dir.string(), ": another process (pid ", pid, ") is writing this run folder (it holds ",
          path.string(), "); wait for it to end, or stop it");
    fail(path.string(), ": cannot lock the run folder: ", std::strerror(error));
  }
  // The holder's pid, for the message of a process refused above (informational: the flock decides).
  if ((open_flags & O_ACCMODE) != O_RDONLY) {
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      const int error = errno;
      ::close(fd);
      fail(path.string(), ": cannot write the run folder's lock: ", std::strerror(error));
    }
  }
  locks[key] = HeldLock{fd, 1};
  key_ = key;
}

void RunFolderLock::release() {
  if (key_.empty()) return;
  std::lock_guard<std::mutex> guard(g_locks_mutex);
  auto& locks = held_locks();
  auto it = locks.find(key_);
  if (it != locks.end() && --it->second.depth == 0) {
    ::close(it->second.fd);  // releases the flock
    locks.erase(it);
  }
  key_.clear();
}

RunFolderLock::~RunFolderLock() { release(); }

RunFolderLock::RunFolderLock(RunFolderLock&& other) noexcept : key_(std::move(other.key_)) { other.key_.clear(); }

RunFolderLock& RunFolderLock::operator=(RunFolderLock&& other) noexcept {
  if (this != &other) {
    release();
    key_ = std::move(other.key_);
    other.key_.clear();
  }
  return *this;
}

CheckpointIdentity read_checkpoint_identity(const fs::path& checkpoint_dir) {
  CheckpointIdentity identity;
  const fs::path path = checkpoint_dir / kTrainingStateFile;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return identity;
  const SafetensorsFile file(path);
  if (file.metadata().count("lineage")) identity.lineage = file.metadata_value("lineage");
  if (file.metadata().count("step")) {
    const std::string step = file.metadata_value("step");
    try {
      identity.step = std::stoll(step);
    } catch (const std::exception&) {
      fail(path.string(), ": __metadata__ field 'step': expected an integer, got '", step, "'");
    }
  }
  return identity;
}

void check_folder_for_fresh_run(const fs::path& dir) {
  if (!holds_checkpoint(dir)) return;
  const CheckpointIdentity held = folder_checkpoint_identity(dir);
  fail((dir / kCheckpointDir).string(), ": the run folder already holds a run (", describe(held.lineage, held.step),
       "); choose a new --out, or --resume its checkpoint");
}

fs::path claim_folder_for_fresh_run(const fs::path& dir) {
  check_folder_for_fresh_run(dir);
  const std::vector<std::string> present = records_in(dir);
  if (present.empty()) return {};
  // A run that left no checkpoint cannot be continued: its records make room for the new run.
  fs::path earlier;
  for (int k = 1;; ++k) {
    earlier = dir / str("earlier-", k);
    if (!fs::exists(earlier)) break;
  }
  ensure_directory(earlier);
  for (const std::string& name : present) {
    std::error_code ec;
    fs::rename(dir / name, earlier / name, ec);
    check(!ec, (dir / name).string(), ": cannot move to ", earlier.string(), ": ", ec.message());
  }
  return earlier;
}

void check_folder_for_resume(const fs::path& dir, const fs::path& checkpoint_dir, const CheckpointIdentity& checkpoint) {
  if (records_in(dir).empty()) return;  // a new folder continuing the run
  std::error_code ec;
  const bool own_folder = fs::weakly_canonical(dir / kCheckpointDir, ec) == fs::weakly_canonical(checkpoint_dir, ec);
  const std::string lineage = folder_lineage(dir);
  const CheckpointIdentity held = folder_checkpoint_identity(dir);
  const std::string resumed = str(checkpoint_dir.string(), " (", describe(checkpoint.lineage, checkpoint.step), ")");
  if (!lineage.empty() && !checkpoint.lineage.empty() && lineage != checkpoint.lineage)
    fail(dir.string(), ": holds another run (", describe(lineage, held.step), "); resuming ", resumed,
         " there would replace its records: resume into the checkpoint's own folder or choose a new --out");
  if (own_folder) return;
  check(!lineage.empty() && !checkpoint.lineage.empty(), dir.string(), ": holds a run (",
        describe(lineage, held.step), ") that cannot be told apart from the one of ", resumed,
        " (a lineage is not recorded): resume into the checkpoint's own folder or choose a new --out");
  check(held.step <= checkpoint.step, dir.string(), ": holds this run at step ", held.step, ", ahead of ", resumed,
        ": resuming there would drop steps ", checkpoint.step + 1, "-", held.step, "; choose a new --out");
}

void check_room_for_checkpoints(const fs::path& dir, const ModelConfig& model) {
  std::error_code ec;
  uint64_t present = 0;
  for (fs::recursive_directory_iterator it(dir / kCheckpointDir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) present += it->file_size(ec);
  const uint64_t needed = 2 * checkpoint_bytes_upper_bound(model);
  const uint64_t free = free_bytes(dir);
  check(free + present >= needed, "--out ", dir.string(), ": the checkpoints of this model need up to ",
        format_fixed(static_cast<double>(needed) / 1e9, 2), " GB (two while one replaces the other), but its file ",
        "system has ", format_fixed(static_cast<double>(free) / 1e9, 2), " GB free",
        present > 0 ? " besides the present checkpoint" : "");
}

void write_run_identity(const fs::path& dir, const std::string& lineage, const fs::path& resumed_from) {
  const Json j{{"format", kRunIdentityFormat},
               {"lineage", lineage},
               {"resumed_from", resumed_from.empty() ? Json(nullptr) : Json(resumed_from.string())}};
  write_file_atomic(dir / kRunIdentityFile, j.dump(2) + "\n");
}

}  // namespace ct
