#include "backend/parallel/tcp_socket.h"

#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "util/error.h"

namespace ct {

TcpSocket::~TcpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

TcpSocket& TcpSocket::operator=(TcpSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void send_all(int fd, const void* data, size_t size, const std::string& what) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t sent = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    check(sent > 0, what, ": send failed: ", std::strerror(errno));
    bytes += sent;
    size -= static_cast<size_t>(sent);
  }
}

bool receive_all(int fd, void* data, size_t size) {
  auto* bytes = static_cast<uint8_t*>(data);
  while (size > 0) {
    const ssize_t got = ::recv(fd, bytes, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

sockaddr_in resolve_ipv4(const std::string& host, int port, const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  const std::string service = std::to_string(port);
  const int status = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &resolved);
  check(status == 0 && resolved, "cannot resolve ", what, " '", host, "': ", ::gai_strerror(status));
  sockaddr_in address{};
  std::memcpy(&address, resolved->ai_addr, sizeof(address));
  ::freeaddrinfo(resolved);
  return address;
}

TcpSocket connect_once(const sockaddr_in& address) {
  TcpSocket socket(::socket(AF_INET, SOCK_STREAM, 0));
  check(socket.open(), "socket: ", std::strerror(errno));
  if (::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) return TcpSocket();
  const int yes = 1;  // small request/reply messages: do not hold them back (Nagle)
  ::setsockopt(socket.fd(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  return socket;
}

TcpSocket listen_on_loopback(int* port) {
  TcpSocket socket(::socket(AF_INET, SOCK_STREAM, 0));
  check(socket.open(), "socket: ", std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // any free port
  socklen_t length = sizeof(address);
  check(::bind(socket.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 &&
            ::listen(socket.fd(), SOMAXCONN) == 0 &&
            ::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&address), &length) == 0,
        "listening on 127.0.0.1: ", std::strerror(errno));
  *port = ntohs(address.sin_port);
  return socket;
}

TcpSocket accept_within(const TcpSocket& listener, double seconds) {
  pollfd ready{listener.fd(), POLLIN, 0};
  const int millis = static_cast<int>(std::clamp(seconds * 1e3, 0.0, 2e9));
  int status;
  do status = ::poll(&ready, 1, millis);
  while (status < 0 && errno == EINTR);  // (a signal restarts the wait in full: a bound, not a deadline)
  if (status <= 0) return TcpSocket();
  TcpSocket socket(::accept(listener.fd(), nullptr, nullptr));
  if (!socket.open()) return socket;
  const int yes = 1;
  ::setsockopt(socket.fd(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  return socket;
}

void set_receive_timeout(int fd, double seconds) {
  const int64_t micros = std::max<int64_t>(static_cast<int64_t>(seconds * 1e6), 1);
  timeval timeout{static_cast<time_t>(micros / 1000000), static_cast<suseconds_t>(micros % 1000000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
}

}  // namespace ct
