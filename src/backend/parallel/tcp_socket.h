#pragma once
// The TCP plumbing of the launches without MPI (rendezvous.h, torchrun_store.h) and of the host-device
// backend's communicator (backend/host_device/tcp_device_comm.h): an owned socket, whole sends and
// receives, an address from a host name, one connection attempt, and a listener on the loopback.
#include <netinet/in.h>

#include <cstddef>
#include <string>

namespace ct {

class TcpSocket {
 public:
  explicit TcpSocket(int fd = -1) : fd_(fd) {}
  ~TcpSocket();
  TcpSocket(TcpSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  TcpSocket& operator=(TcpSocket&& other) noexcept;
  TcpSocket(const TcpSocket&) = delete;
  TcpSocket& operator=(const TcpSocket&) = delete;
  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }

 private:
  int fd_;
};

// Sends every byte (retrying short sends; no SIGPIPE); a ct::Error naming `what` when the peer is gone.
void send_all(int fd, const void* data, size_t size, const std::string& what);
// Receives exactly `size` bytes; false when the peer closed, failed, or a receive timeout passed.
bool receive_all(int fd, void* data, size_t size);
// The IPv4 address of host:port; a ct::Error naming `what` (e.g. "MASTER_ADDR") when it does not resolve.
sockaddr_in resolve_ipv4(const std::string& host, int port, const std::string& what);
// One connection attempt; a closed socket (open() false) when nobody accepts at `address`.
TcpSocket connect_once(const sockaddr_in& address);
// A socket listening on 127.0.0.1 at a port the kernel picks (*port gets it).
TcpSocket listen_on_loopback(int* port);
// The next connection to `listener`; a closed socket when none arrives within `seconds`.
TcpSocket accept_within(const TcpSocket& listener, double seconds);
// Bounds every later receive on `fd` to `seconds` (at least 1 us: {0, 0} would mean no bound).
void set_receive_timeout(int fd, double seconds);

}  // namespace ct
