#include "backend/parallel/rendezvous.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "backend/parallel/process_group.h"
#include "backend/parallel/tcp_socket.h"
#include "backend/parallel/torchrun_store.h"
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

std::vector<uint8_t> serve(const LaunchEnvironment& env, const std::vector<uint8_t>& id) {
  TcpSocket listener(::socket(AF_INET, SOCK_STREAM, 0));
  check(listener.open(), "rendezvous: socket: ", std::strerror(errno));
  const int yes = 1;
  ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(env.master_port));
  const bool bound = ::bind(listener.fd(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  check(bound, "rendezvous: rank 0 cannot listen on port ", env.master_port, " (MASTER_PORT): ", std::strerror(errno));
  check(::listen(listener.fd(), 128) == 0, "rendezvous: listen: ", std::strerror(errno));
  set_receive_timeout(listener.fd(), env.timeout_seconds);  // bounds accept() too
  for (int served = 1; served < env.world_size; ++served) {
    TcpSocket peer(::accept(listener.fd(), nullptr, nullptr));
    check(peer.open(), "rendezvous: rank 0 waited ", env.timeout_seconds, " s for rank connections on port ",
          env.master_port, " and got ", served - 1, " of ", env.world_size - 1);
    send_all(peer.fd(), id.data(), id.size(), "rendezvous: rank 0");
  }
  return id;
}

std::vector<uint8_t> fetch(const LaunchEnvironment& env, size_t size) {
  const sockaddr_in address = resolve_ipv4(env.master_addr, env.master_port, "MASTER_ADDR");
  const auto start = Clock::now();
  for (;;) {
    TcpSocket socket = connect_once(address);
    if (socket.open()) {
      std::vector<uint8_t> bytes(size);
      if (receive_all(socket.fd(), bytes.data(), size)) return bytes;
    }
    check(seconds_since(start) < env.timeout_seconds, "rendezvous: rank ", env.rank, " could not get the id from ",
          env.master_addr, ":", env.master_port, " (MASTER_ADDR:MASTER_PORT) within ", env.timeout_seconds, " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Under torchrun: rank 0 sets the id in the agent's store, the others wait for it there. The key
// carries the restart count, so that workers restarted by torchrun never read an earlier id.
std::vector<uint8_t> exchange_through_torchrun_store(const LaunchEnvironment& env, const std::vector<uint8_t>& id) {
  TorchrunStore store(env.master_addr, env.master_port, env.timeout_seconds);
  const std::string key = "clocktrain/nccl_id/restart_" + std::to_string(env.restart_count);
  if (env.rank == 0) {
    store.set(key, id);
    return id;
  }
  std::vector<uint8_t> bytes = store.get(key, env.timeout_seconds);
  check(bytes.size() == id.size(), "rendezvous: '", key, "' in ", store.where(), " holds ", bytes.size(),
        " bytes, expected ", id.size());
  return bytes;
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
  if (env.torchrun_agent_store) return exchange_through_torchrun_store(env, id);
  return env.rank == 0 ? serve(env, id) : fetch(env, id.size());
}

}  // namespace ct
