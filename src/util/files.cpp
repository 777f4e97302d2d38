#include "util/files.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/error.h"

namespace ct {

namespace {
std::string errno_text() { return std::strerror(errno); }

fs::path temp_name_for(const fs::path& final_path) {
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = final_path;
  tmp += str(".tmp.", ::getpid(), ".", counter++);
  return tmp;
}

void fsync_directory(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

std::string read_file(const fs::path& path) {
  std::error_code ec;
  check(!fs::is_directory(path, ec), path.string(), ": a folder, where a file was expected");
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path.string(), ": cannot open for reading");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(!in.bad(), path.string(), ": read error");
  return data;
}

std::vector<uint8_t> read_file_bytes(const fs::path& path) {
  std::string s = read_file(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

void ensure_directory(const fs::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, dir.string(), ": cannot create folder: ", ec.message());
}

void check_out_file_writable(const std::string& option, const std::string& file) {
  if (file.empty()) return;
  const fs::path parent = fs::path(file).parent_path();
  check_writable_folder(parent.empty() ? fs::path(".") : parent, option + " " + file + ":");
}

void check_writable_folder(const fs::path& dir, const std::string& what) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, what, " ", dir.string(), ": cannot create folder: ", ec.message());
  std::string probe = (dir / ".clocktrain-write-probe.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  check(fd >= 0, what, " ", dir.string(), ": cannot write there: ", errno_text());
  // One byte, so that a file system with no block left refuses now rather than at the first real write.
  const bool written = ::write(fd, "x", 1) == 1 && ::fsync(fd) == 0;
  const std::string reason = written ? std::string() : errno_text();
  ::close(fd);
  ::unlink(probe.c_str());
  check(written, what, " ", dir.string(), ": cannot write there: ", reason);
}

uint64_t free_bytes(const fs::path& path) {
  std::error_code ec;
  fs::path existing = fs::absolute(path.empty() ? fs::path(".") : path, ec);
  while (!fs::exists(existing, ec) && existing != existing.root_path()) existing = existing.parent_path();
  struct statvfs s {};
  check(::statvfs(existing.c_str(), &s) == 0, existing.string(), ": cannot read the file system's free space: ",
        errno_text());
  return static_cast<uint64_t>(s.f_bavail) * static_cast<uint64_t>(s.f_frsize);
}

AtomicWriter::AtomicWriter(fs::path final_path)
    : final_path_(std::move(final_path)), temp_path_(temp_name_for(final_path_)) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd_ >= 0, final_path_.string(), ": cannot create temporary file ", temp_path_.string(), ": ",
        errno_text());
}

AtomicWriter::~AtomicWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicWriter::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    check(n > 0, final_path_.string(), ": write failed after ", bytes_written_, " bytes: ", errno_text());
    p += n;
    bytes -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
}

void AtomicWriter::commit() {
  check(::fsync(fd_) == 0, final_path_.string(), ": fsync failed: ", errno_text());
  int rc = ::close(fd_);
  fd_ = -1;
  check(rc == 0, final_path_.string(), ": close failed: ", errno_text());
  check(::rename(temp_path_.c_str(), final_path_.c_str()) == 0, final_path_.string(),
        ": cannot rename temporary file into place: ", errno_text());
  committed_ = true;
  fsync_directory(final_path_.parent_path());
}

void write_file_atomic(const fs::path& path, std::string_view contents) {
  AtomicWriter writer(path);
  writer.write(contents);
  writer.commit();
}

}  // namespace ct
