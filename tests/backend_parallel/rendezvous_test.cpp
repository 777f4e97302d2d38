// The id rendezvous, with every rank a thread of this process: through a file and through a store
// that answers as torchrun's agent store does; then with real processes under a real torchrun where
// one is installed. Every rank must end with rank 0's bytes; a rank left alone (no store to reach, a
// key nobody sets, a file nobody writes) stops with an error naming it within the timeout, not a hang.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "backend/parallel/rendezvous.h"
#include "backend/parallel/tcp_socket.h"
#include "test_support.h"
#include "util/error.h"

namespace ct {
namespace {

std::vector<uint8_t> id_bytes(uint8_t seed) {
  std::vector<uint8_t> bytes(128);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return bytes;
}

std::vector<std::vector<uint8_t>> run_ranks(LaunchEnvironment base, int world) {
  std::vector<std::future<std::vector<uint8_t>>> ranks;
  for (int r = world - 1; r >= 0; --r) {  // rank 0 starts last: the others must wait for it
    LaunchEnvironment env = base;
    env.rank = r;
    env.local_rank = r;
    env.world_size = world;
    ranks.push_back(std::async(std::launch::async, [env, r] { return exchange_id(env, id_bytes(static_cast<uint8_t>(r + 1))); }));
  }
  std::vector<std::vector<uint8_t>> results;
  for (auto& f : ranks) results.push_back(f.get());
  return results;
}

TEST(Rendezvous, OneProcessKeepsItsId) {
  LaunchEnvironment env;
  EXPECT_EQ(exchange_id(env, id_bytes(9)), id_bytes(9));
}

TEST(Rendezvous, ThroughAFile) {
  test::TempDir dir;
  LaunchEnvironment env;
  env.id_file = (dir.path() / "nccl-id").string();
  env.timeout_seconds = 20;
  for (const auto& bytes : run_ranks(env, 4)) EXPECT_EQ(bytes, id_bytes(1));  // rank 0's seed
}

TEST(Rendezvous, WaitingForAMissingFileTimesOut) {
  test::TempDir dir;
  LaunchEnvironment env;
  env.world_size = 2;
  env.rank = 1;
  env.id_file = (dir.path() / "never-written").string();
  env.timeout_seconds = 0.3;
  try {
    exchange_id(env, id_bytes(2));
    ADD_FAILURE() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("never-written"), std::string::npos) << e.what();
  }
}

// A port nobody listens on: bound by the kernel's choice, then closed.
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

// Rank `rank` of `world` under torchrun's variables, alone: MASTER_PORT is one nobody listens on.
LaunchEnvironment lone_rank_under_torchrun(int rank, int world) {
  LaunchEnvironment env;
  env.launcher = "torchrun";
  env.torchrun_agent_store = true;
  env.world_size = world;
  env.rank = rank;
  env.master_addr = "127.0.0.1";
  env.master_port = unused_port();
  env.timeout_seconds = 0.5;  // fractional: a timeout truncated to {0, 0} would once have meant "no timeout"
  return env;
}

// The error `exchange_id` gives `env`, checked to come within `limit` seconds.
std::string error_within(double limit, const LaunchEnvironment& env) {
  const auto start = std::chrono::steady_clock::now();
  const std::string message = test::error_of([&] { exchange_id(env, id_bytes(static_cast<uint8_t>(env.rank + 1))); });
  EXPECT_FALSE(message.empty()) << "expected an error";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), limit) << message;
  return message;
}

// torchrun's variables set by hand (no agent store) and no file: GPU processes have nowhere to meet.
TEST(Rendezvous, NoMeetingPointIsAClearError) {
  LaunchEnvironment env;
  env.launcher = "torchrun";
  env.world_size = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = 29500;
  EXPECT_NE(test::error_of([&] { exchange_id(env, id_bytes(1)); })
                .find("2 GPU processes launched by torchrun have no way to share NCCL's id: launch with torchrun "
                      "(its store) or mpirun, or set CLOCKTRAIN_NCCL_ID_FILE"),
            std::string::npos);
}

// A stand-in for torchrun's agent store on localhost: PyTorch's TCPStore queries VALIDATE, SET, GET
// and CHECK as its TCPStoreBackend.hpp defines them (the client's reading of the same source: the
// test of the client against PyTorch itself is UnderARealTorchrun below). It holds the port, as
// torchrun's agent does, so a rank 0 that tried to listen there would fail.
class FakeAgentStore {
 public:
  FakeAgentStore() : listener_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_.fd(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::getsockname(listener_.fd(), reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(::listen(listener_.fd(), 16), 0);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept(listener_.fd(), nullptr, nullptr);
        if (fd < 0 || stopping_) {
          if (fd >= 0) ::close(fd);
          return;
        }
        std::lock_guard<std::mutex> lock(mutex_);
        connections_.emplace_back([this, fd] { serve(TcpSocket(fd)); });
      }
    });
  }
  ~FakeAgentStore() {
    stopping_ = true;
    TcpSocket wake = connect_once(resolve_ipv4("127.0.0.1", port_, "test"));  // unblocks accept()
    acceptor_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& t : connections_) t.join();
  }
  int port() const { return port_; }
  std::set<std::string> keys() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::set<std::string> out;
    for (const auto& kv : values_) out.insert(kv.first);
    return out;
  }
  int unvalidated_connections() const { return unvalidated_; }

 private:
  static bool read_sized(int fd, std::string& out) {
    uint64_t length = 0;
    if (!receive_all(fd, &length, sizeof(length))) return false;
    out.resize(length);
    return receive_all(fd, out.data(), length);
  }
  void serve(TcpSocket socket) {
    const int fd = socket.fd();
    uint8_t query = 0;
    uint32_t magic = 0;
    if (!receive_all(fd, &query, 1) || query != 0 || !receive_all(fd, &magic, 4) || magic != 0x3C85F7CE) {
      ++unvalidated_;  // the real store closes such a connection
      return;
    }
    while (receive_all(fd, &query, 1)) {
      std::string key, value;
      if (query == 1) {  // SET key value
        if (!read_sized(fd, key) || !read_sized(fd, value)) return;
        std::lock_guard<std::mutex> lock(mutex_);
        values_[key] = value;
      } else if (query == 3) {  // GET key -> value
        if (!read_sized(fd, key)) return;
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string& v = values_.at(key);
        const uint64_t length = v.size();
        send_all(fd, &length, sizeof(length), "fake store");
        send_all(fd, v.data(), v.size(), "fake store");
      } else if (query == 5) {  // CHECK count keys -> READY (0) / NOT_READY (1)
        uint64_t count = 0;
        if (!receive_all(fd, &count, sizeof(count))) return;
        bool ready = true;
        for (uint64_t i = 0; i < count; ++i) {
          if (!read_sized(fd, key)) return;
          std::lock_guard<std::mutex> lock(mutex_);
          ready = ready && values_.count(key);
        }
        const uint8_t reply = ready ? 0 : 1;
        send_all(fd, &reply, 1, "fake store");
      } else {
        ADD_FAILURE() << "unexpected query " << int(query);
        return;
      }
    }
  }
  TcpSocket listener_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> unvalidated_{0};
  std::mutex mutex_;
  std::map<std::string, std::string> values_;
  std::thread acceptor_;
  std::vector<std::thread> connections_;
};

LaunchEnvironment under_torchrun(const FakeAgentStore& store) {
  LaunchEnvironment env;
  env.launcher = "torchrun";
  env.torchrun_agent_store = true;
  env.restart_count = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = store.port();
  env.timeout_seconds = 20;
  return env;
}

TEST(Rendezvous, ThroughTorchrunsAgentStore) {
  FakeAgentStore store;
  for (const auto& bytes : run_ranks(under_torchrun(store), 4)) EXPECT_EQ(bytes, id_bytes(1));
  EXPECT_EQ(store.keys(), std::set<std::string>{"clocktrain/nccl_id/restart_2"});
  EXPECT_EQ(store.unvalidated_connections(), 0);
}

TEST(Rendezvous, AKeyNobodySetsInTorchrunsStoreTimesOut) {
  FakeAgentStore store;
  LaunchEnvironment env = under_torchrun(store);
  env.world_size = 2;
  env.rank = 1;
  env.timeout_seconds = 0.5;
  const std::string message = error_within(10, env);
  EXPECT_NE(message.find("'clocktrain/nccl_id/restart_2' was not set in 127.0.0.1:" + std::to_string(store.port()) +
                         " (MASTER_ADDR:MASTER_PORT, torchrun's store) within 0.5 s"),
            std::string::npos)
      << message;
}

TEST(Rendezvous, NoTorchrunStoreToReachSaysSoWithinTheTimeout) {
  const LaunchEnvironment env = lone_rank_under_torchrun(0, 2);
  const std::string message = error_within(10, env);
  EXPECT_NE(message.find("could not connect to 127.0.0.1:" + std::to_string(env.master_port) +
                         " (MASTER_ADDR:MASTER_PORT, torchrun's store) within 0.5 s"),
            std::string::npos)
      << message;
}

// torchrun from PyTorch 2 (bench/torch2_venv.sh installs one; CLOCKTRAIN_TORCHRUN names another):
// three real processes whose MASTER_PORT is held by torchrun's agent store.
std::string installed_torchrun() {
  if (const char* given = std::getenv("CLOCKTRAIN_TORCHRUN")) return given;
  const auto venv = test::source_dir() / "build" / "torch2-venv" / "bin" / "torchrun";
  return std::filesystem::exists(venv) ? venv.string() : "";
}

TEST(Rendezvous, UnderARealTorchrun) {
  const std::string torchrun = installed_torchrun();
  if (torchrun.empty())
    GTEST_SKIP() << "no torchrun: bench/torch2_venv.sh installs PyTorch 2 (from PyPI) into build/torch2-venv, "
                    "or set CLOCKTRAIN_TORCHRUN";
  const auto result = test::run_command("CLOCKTRAIN_RENDEZVOUS_TIMEOUT=60 " + torchrun +
                                        " --nproc_per_node 3 --no-python " CLOCKTRAIN_RENDEZVOUS_PROBE);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::string rank0_id;
  for (int i = 0; i < 16; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof(hex), "%02x", 0x40 + i);
    rank0_id += hex;
  }
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(result.output.find("rank " + std::to_string(r) + " of 3 got " + rank0_id), std::string::npos)
        << result.output;
}

}  // namespace
}  // namespace ct
