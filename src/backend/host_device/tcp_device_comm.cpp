#include "backend/host_device/tcp_device_comm.h"

#include <netinet/in.h>

#include <cstdint>
#include <cstring>
#include <random>

#include "backend/cpu/bf16.h"
#include "backend/parallel/rendezvous.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/text_format.h"

namespace ct {

namespace {

// The id rank 0 hands out (rendezvous.h): a random key, so that a stray connection to the port is
// refused, and the port rank 0 listens on.
struct CommId {
  uint64_t key = 0;
  uint32_t port = 0;
};
// What a process sends first on its connection: the key and its rank.
struct Hello {
  uint64_t key = 0;
  int32_t rank = -1;
};

// out[i] += in[i] for the tensor's dtype (bf16: summed in f32 into `wide`, rounded once at the end).
void add_into(const Tensor& t, std::vector<double>& wide, const void* in) {
  const int64_t n = t.numel();
  if (t.dtype == DType::f64) {
    const auto* x = static_cast<const double*>(in);
    for (int64_t i = 0; i < n; ++i) wide[i] += x[i];
  } else if (t.dtype == DType::f32) {
    const auto* x = static_cast<const float*>(in);
    for (int64_t i = 0; i < n; ++i) wide[i] = static_cast<float>(static_cast<float>(wide[i]) + x[i]);
  } else {
    const auto* x = static_cast<const uint16_t*>(in);
    for (int64_t i = 0; i < n; ++i) wide[i] = static_cast<float>(static_cast<float>(wide[i]) + bf16_to_float(x[i]));
  }
}

// The tensor's values, widened (f32 and bf16 values are exact in a double).
std::vector<double> widened(const Tensor& t) {
  std::vector<double> wide(static_cast<size_t>(t.numel()), 0.0);
  add_into(t, wide, t.data);  // 0 + x is x in every dtype
  return wide;
}

// factor * sum, stored into the tensor in its dtype (f32 and bf16: the product rounded in f32 first).
void store_scaled(const Tensor& t, const std::vector<double>& wide, double factor) {
  const int64_t n = t.numel();
  if (t.dtype == DType::f64) {
    auto* y = static_cast<double*>(t.data);
    for (int64_t i = 0; i < n; ++i) y[i] = factor * wide[i];
  } else if (t.dtype == DType::f32) {
    auto* y = static_cast<float*>(t.data);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(factor) * static_cast<float>(wide[i]);
  } else {
    auto* y = static_cast<uint16_t*>(t.data);
    for (int64_t i = 0; i < n; ++i) y[i] = float_to_bf16(static_cast<float>(factor) * static_cast<float>(wide[i]));
  }
}

size_t bytes_of(const Tensor& t) { return static_cast<size_t>(t.numel()) * dtype_size(t.dtype); }

}  // namespace

TcpDeviceComm::TcpDeviceComm(const LaunchEnvironment& env)
    : rank_(env.rank), size_(env.world_size), limit_(stall_limit(env)) {
  check(env.distributed(), "host-device communicator: expected several processes, the launcher started one");
  // loopback only: every process must be on this machine, which the launcher's local rank shows
  check(env.local_rank == env.rank, "the host-device backend connects its processes over this machine's loopback: "
        "process ", env.rank, " of ", env.world_size, " is local process ", env.local_rank,
        " of its machine (launch every process on one machine)");
  peers_.resize(static_cast<size_t>(rank_ == 0 ? size_ : 1));
  CommId id;
  TcpSocket listener;
  if (rank_ == 0) {
    int port = 0;
    listener = listen_on_loopback(&port);
    id.port = static_cast<uint32_t>(port);
    id.key = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  std::vector<uint8_t> bytes(sizeof(CommId));
  std::memcpy(bytes.data(), &id, sizeof(id));
  bytes = exchange_id(env, bytes);
  std::memcpy(&id, bytes.data(), sizeof(id));
  port_ = static_cast<int>(id.port);
  const std::string where = str("127.0.0.1:", port_);
  if (rank_ != 0) {
    const sockaddr_in address = resolve_ipv4("127.0.0.1", port_, "rank 0's address");
    TcpSocket socket = connect_once(address);
    check(socket.open(), "host-device communicator: rank ", rank_, " of ", size_, " could not connect to rank 0 at ",
          where);
    const Hello hello{id.key, rank_};
    send_all(socket.fd(), &hello, sizeof(hello), str("host-device communicator: rank ", rank_, "'s hello"));
    set_receive_timeout(socket.fd(), limit_.seconds);
    peers_[0] = std::move(socket);
    return;
  }
  // rank 0 waits for every other process, as long as a rendezvous may take
  const Stopwatch waited;
  for (int joined = 1; joined < size_;) {
    const double left = env.timeout_seconds - waited.seconds();
    TcpSocket socket = left > 0 ? accept_within(listener, left) : TcpSocket();
    check(socket.open(), "host-device communicator: rank 0 of ", size_, " waited ", env.timeout_seconds,
          " s (CLOCKTRAIN_RENDEZVOUS_TIMEOUT) at ", where, " and ", joined - 1, " of the ", size_ - 1,
          " other processes connected");
    set_receive_timeout(socket.fd(), env.timeout_seconds);
    Hello hello;
    if (!receive_all(socket.fd(), &hello, sizeof(hello)) || hello.key != id.key) continue;  // not one of ours
    check(hello.rank > 0 && hello.rank < size_ && !peers_[static_cast<size_t>(hello.rank)].open(),
          "host-device communicator: a connection at ", where, " says it is rank ", hello.rank, " of ", size_,
          ", which is outside [1, ", size_, ") or connected already");
    set_receive_timeout(socket.fd(), limit_.seconds);
    peers_[static_cast<size_t>(hello.rank)] = std::move(socket);
    ++joined;
  }
}

std::string TcpDeviceComm::description() const { return str("TCP star through rank 0 (127.0.0.1:", port_, ")"); }

void TcpDeviceComm::receive_from(int peer, void* data, size_t bytes, const char* op) {
  const TcpSocket& socket = peers_[static_cast<size_t>(rank_ == 0 ? peer : 0)];
  check(receive_all(socket.fd(), data, bytes), "host-device ", op, " on rank ", rank_, " of ", size_, ": rank ", peer,
        " closed its connection or sent nothing within ", format_seconds(limit_.seconds), " (", limit_.variable,
        "): a process of the job stopped or cannot be reached");
}

void TcpDeviceComm::send_to(int peer, const void* data, size_t bytes, const char* op) {
  const TcpSocket& socket = peers_[static_cast<size_t>(rank_ == 0 ? peer : 0)];
  send_all(socket.fd(), data, bytes, str("host-device ", op, " on rank ", rank_, " of ", size_, " to rank ", peer));
}

void TcpDeviceComm::all_reduce_sum(const std::vector<Tensor>& tensors, double factor) {
  const char* op = "all-reduce";
  for (const Tensor& t : tensors) {
    const size_t bytes = bytes_of(t);
    if (rank_ != 0) {
      send_to(0, t.data, bytes, op);
      receive_from(0, t.data, bytes, op);
      continue;
    }
    std::vector<double> sum = widened(t);
    std::vector<uint8_t> incoming(bytes);
    for (int peer = 1; peer < size_; ++peer) {
      receive_from(peer, incoming.data(), bytes, op);
      add_into(t, sum, incoming.data());
    }
    store_scaled(t, sum, factor);
    for (int peer = 1; peer < size_; ++peer) send_to(peer, t.data, bytes, op);
  }
}

void TcpDeviceComm::broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots) {
  const char* op = "broadcast";
  check(tensors.size() == roots.size(), op, ": ", tensors.size(), " tensors but ", roots.size(), " roots");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int root = roots[i];
    check(root >= 0 && root < size_, op, ": root ", root, " is outside [0, ", size_, ")");
    const size_t bytes = bytes_of(tensors[i]);
    void* data = tensors[i].data;
    if (rank_ == 0) {
      if (root != 0) receive_from(root, data, bytes, op);
      for (int peer = 1; peer < size_; ++peer)
        if (peer != root) send_to(peer, data, bytes, op);
    } else if (rank_ == root) {
      send_to(0, data, bytes, op);
    } else {
      receive_from(0, data, bytes, op);
    }
  }
}

}  // namespace ct
