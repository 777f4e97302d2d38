#include "data/staging.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/files.h"

namespace ct {

namespace {

constexpr const char* kStagingPrefix = ".prepare-staging-";

// Staging folders left by a process that no longer runs (a crash) are removed.
void remove_abandoned_staging(const std::filesystem::path& out_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(kStagingPrefix, 0) != 0 || !entry.is_directory()) continue;
    pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + std::strlen(kStagingPrefix)));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace

StagingFolder::StagingFolder(std::filesystem::path out_dir) : out_dir_(std::move(out_dir)) {
  ensure_directory(out_dir_);
  remove_abandoned_staging(out_dir_);
  staging_ = out_dir_ / (kStagingPrefix + std::to_string(::getpid()));
  std::error_code ec;
  std::filesystem::remove_all(staging_, ec);
  ensure_directory(staging_);
}

StagingFolder::~StagingFolder() {
  if (!committed_) {
    std::error_code ec;
    std::filesystem::remove_all(staging_, ec);
  }
}

void StagingFolder::commit(const std::vector<std::string>& names_in_order) {
  for (const auto& name : names_in_order) {
    auto from = staging_ / name, to = out_dir_ / name;
    check(::rename(from.c_str(), to.c_str()) == 0, to.string(), ": cannot move the prepared file into place: ",
          std::strerror(errno));
  }
  int fd = ::open(out_dir_.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  committed_ = true;
  std::error_code ec;
  std::filesystem::remove_all(staging_, ec);
}

}  // namespace ct
