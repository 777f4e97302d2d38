// The id rendezvous, with every rank a thread of this process: through a file and over TCP on
// localhost. Every rank must end with rank 0's bytes; a rank left alone (no rank 0 to reach, or no
// rank reaching rank 0) stops with an error naming the address within the timeout, not a hang.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <random>
#include <vector>

#include "backend/parallel/rendezvous.h"
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

TEST(Rendezvous, OverTcp) {
  LaunchEnvironment env;
  env.master_addr = "127.0.0.1";
  std::mt19937 rng(std::random_device{}());
  env.master_port = 20000 + static_cast<int>(rng() % 20000);
  env.timeout_seconds = 20;
  for (const auto& bytes : run_ranks(env, 3)) EXPECT_EQ(bytes, id_bytes(1));
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

// Rank `rank` of `world` over TCP on localhost, alone: the port is one nobody listens on.
LaunchEnvironment lone_rank_over_tcp(int rank, int world) {
  LaunchEnvironment env;
  env.world_size = world;
  env.rank = rank;
  env.master_addr = "127.0.0.1";
  env.master_port = unused_port();
  env.timeout_seconds = 0.5;  // a fractional timeout: once read as "no timeout" by rank 0, which then waited forever
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

TEST(Rendezvous, ARankThatCannotReachRankZeroSaysSoWithinTheTimeout) {
  const LaunchEnvironment env = lone_rank_over_tcp(1, 2);
  const std::string message = error_within(10, env);
  EXPECT_NE(message.find("rank 1 could not get the id from 127.0.0.1:" + std::to_string(env.master_port) +
                         " (MASTER_ADDR:MASTER_PORT) within 0.5 s"),
            std::string::npos)
      << message;
}

TEST(Rendezvous, RankZeroThatNoRankReachesSaysSoWithinTheTimeout) {
  const LaunchEnvironment env = lone_rank_over_tcp(0, 3);
  const std::string message = error_within(10, env);
  EXPECT_NE(message.find("rank 0 waited 0.5 s for rank connections on port " + std::to_string(env.master_port) +
                         " and got 0 of 2"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace ct
