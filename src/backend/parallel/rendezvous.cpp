#include "backend/parallel/rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "backend/parallel/process_group.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<uint8_t> exchange_by_file(const LaunchEnvironment& env, const std::vector<uint8_t>& id) {
  if (env.rank == 0) {
    write_file_atomic(env.id_file, std::string_view(reinterpret_cast<const char*>(id.data()), id.size()));
    return id;
  }
  const auto start = Clock::now();
  for (;;) {
    std::error_code ec;
    if (std::filesystem::exists(env.id_file, ec) && std::filesystem::file_size(env.id_file, ec) == id.size()) {
      std::vector<uint8_t> bytes = read_file_bytes(env.id_file);
      if (bytes.size() == id.size()) return bytes;
    }
    check(seconds_since(start) < env.timeout_seconds, "rendezvous: rank ", env.rank, " waited ", env.timeout_seconds,
          " s for rank 0 to write ", env.id_file, " (", id.size(), " bytes)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

void send_all(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    check(sent > 0, "rendezvous: send failed: ", std::strerror(errno));
    data += sent;
    size -= static_cast<size_t>(sent);
  }
}

bool receive_all(int fd, uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t got = ::recv(fd, data, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    data += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

std::vector<uint8_t> serve(const LaunchEnvironment& env, const std::vector<uint8_t>& id) {
  Socket listener(::socket(AF_INET, SOCK_STREAM, 0));
  check(listener.fd() >= 0, "rendezvous: socket: ", std::strerror(errno));
  const int yes = 1;
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(env.master_port));
  check(::bind(listener.fd(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0,
        "rendezvous: rank 0 cannot listen on port ", env.master_port, " (MASTER_PORT): ", std::strerror(errno));
  check(::listen(listener.fd(), 128) == 0, "rendezvous: listen: ", std::strerror(errno));
  // Seconds and microseconds, at least 1 us: a timeout truncated to {0, 0} would mean "wait forever".
  const int64_t micros = std::max<int64_t>(static_cast<int64_t>(env.timeout_seconds * 1e6), 1);
  timeval timeout{static_cast<time_t>(micros / 1000000), static_cast<suseconds_t>(micros % 1000000)};
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  for (int served = 1; served < env.world_size; ++served) {
    Socket peer(::accept(listener.fd(), nullptr, nullptr));
    check(peer.fd() >= 0, "rendezvous: rank 0 waited ", env.timeout_seconds, " s for rank connections on port ",
          env.master_port, " and got ", served - 1, " of ", env.world_size - 1);
    send_all(peer.fd(), id.data(), id.size());
  }
  return id;
}

std::vector<uint8_t> fetch(const LaunchEnvironment& env, size_t size) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  const std::string port = std::to_string(env.master_port);
  const int status = ::getaddrinfo(env.master_addr.c_str(), port.c_str(), &hints, &resolved);
  check(status == 0 && resolved, "rendezvous: cannot resolve MASTER_ADDR '", env.master_addr, "': ",
        ::gai_strerror(status));
  sockaddr_in address{};
  std::memcpy(&address, resolved->ai_addr, sizeof(address));
  ::freeaddrinfo(resolved);
  const auto start = Clock::now();
  for (;;) {
    Socket socket(::socket(AF_INET, SOCK_STREAM, 0));
    check(socket.fd() >= 0, "rendezvous: socket: ", std::strerror(errno));
    if (::connect(socket.fd(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      std::vector<uint8_t> bytes(size);
      if (receive_all(socket.fd(), bytes.data(), size)) return bytes;
    }
    check(seconds_since(start) < env.timeout_seconds, "rendezvous: rank ", env.rank, " could not get the id from ",
          env.master_addr, ":", env.master_port, " (MASTER_ADDR:MASTER_PORT) within ", env.timeout_seconds, " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

std::vector<uint8_t> exchange_id(const LaunchEnvironment& env, const std::vector<uint8_t>& id) {
  if (!env.distributed()) return id;
  if (env.id_travels_by_mpi()) {  // mpirun: MPI already connects the processes
    std::vector<uint8_t> bytes = id;
    ProcessGroup::world().broadcast(bytes.data(), static_cast<int64_t>(bytes.size()), 0);
    return bytes;
  }
  if (!env.id_file.empty()) return exchange_by_file(env, id);
  check(!env.master_addr.empty() && env.master_port > 0,
        "rendezvous: set CLOCKTRAIN_NCCL_ID_FILE or MASTER_ADDR and MASTER_PORT");
  return env.rank == 0 ? serve(env, id) : fetch(env, id.size());
}

}  // namespace ct
