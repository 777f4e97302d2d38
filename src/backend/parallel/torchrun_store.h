#pragma once
// A client of the key-value store that torchrun's agent serves at MASTER_ADDR:MASTER_PORT.
//
// torchrun (PyTorch 2.x) starts a c10d TCPStore in its agent process on MASTER_PORT before it starts
// the workers, and tells them so with TORCHELASTIC_USE_AGENT_STORE=True: the port is taken, and the
// store is the one meeting point every worker, on every node, can reach. So under torchrun rank 0
// puts NCCL's unique id in that store and the others read it from there (rendezvous.h).
//
// The wire format is PyTorch's (torch/csrc/distributed/c10d/TCPStoreBackend.hpp and TCPStore.cpp,
// with its validation message; checked against PyTorch 2.15); only the four queries needed are
// spoken. Every query is one byte of type, then its arguments; a string or byte vector is a uint64
// length then the bytes, integers in the host's byte order (both ends are x86-64 here):
//   VALIDATE (0)  uint32 0x3C85F7CE                       no reply; the first message of a connection
//   SET (1)       key, value                              no reply
//   GET (3)       key                                     value (the key must exist: CHECK first)
//   CHECK (5)     uint64 count, keys                      one byte: 0 every key is set, 1 not yet
// Waiting for a key polls CHECK rather than sending WAIT, whose reply may never come: the wait is
// bounded by the caller's timeout and ends with an error naming the key and the address.
#include <cstdint>
#include <string>
#include <vector>

#include "backend/parallel/tcp_socket.h"

namespace ct {

class TorchrunStore {
 public:
  // Connects to host:port, retrying until timeout_seconds have passed (the agent may still be
  // starting), and validates the connection.
  TorchrunStore(const std::string& host, int port, double timeout_seconds);

  void set(const std::string& key, const std::vector<uint8_t>& value);
  // Waits up to timeout_seconds for some process to set `key`.
  void wait_for(const std::string& key, double timeout_seconds);
  // The value of `key`, waiting for it as wait_for does.
  std::vector<uint8_t> get(const std::string& key, double timeout_seconds);
  // Whether `key` is set now.
  bool has(const std::string& key);

  // "MASTER_ADDR:MASTER_PORT (host:port, torchrun's store)", for messages.
  const std::string& where() const { return where_; }

 private:
  void send_key(uint8_t query, const std::string& key);
  TcpSocket socket_;
  std::string where_;
  double timeout_seconds_;
};

}  // namespace ct
