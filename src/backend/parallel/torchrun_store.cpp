#include "backend/parallel/torchrun_store.h"

#include <chrono>
#include <thread>

#include "util/clock.h"
#include "util/error.h"

namespace ct {

namespace {

// PyTorch's c10d::detail::QueryType values for the queries used here, and its validation number.
constexpr uint8_t kValidate = 0, kSet = 1, kGet = 3, kCheck = 5;
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
constexpr uint8_t kCheckReady = 0, kCheckNotReady = 1;

void append(std::vector<uint8_t>& out, const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  out.insert(out.end(), bytes, bytes + size);
}

// A string or byte vector as the store reads it: uint64 length, then the bytes.
void append_sized(std::vector<uint8_t>& out, const void* data, size_t size) {
  const uint64_t length = size;
  append(out, &length, sizeof(length));
  append(out, data, size);
}

}  // namespace

TorchrunStore::TorchrunStore(const std::string& host, int port, double timeout_seconds)
    : where_(host + ":" + std::to_string(port) + " (MASTER_ADDR:MASTER_PORT, torchrun's store)"),
      timeout_seconds_(timeout_seconds) {
  const sockaddr_in address = resolve_ipv4(host, port, "MASTER_ADDR");
  const Stopwatch waited;
  for (;;) {
    socket_ = connect_once(address);
    if (socket_.open()) break;
    check(waited.seconds() < timeout_seconds, "rendezvous: could not connect to ", where_, " within ",
          timeout_seconds, " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  set_receive_timeout(socket_.fd(), timeout_seconds);
  std::vector<uint8_t> message{kValidate};
  append(message, &kValidationMagic, sizeof(kValidationMagic));
  send_all(socket_.fd(), message.data(), message.size(), "rendezvous: " + where_);
}

void TorchrunStore::send_key(uint8_t query, const std::string& key) {
  std::vector<uint8_t> message{query};
  append_sized(message, key.data(), key.size());
  send_all(socket_.fd(), message.data(), message.size(), "rendezvous: " + where_);
}

void TorchrunStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::vector<uint8_t> message{kSet};
  append_sized(message, key.data(), key.size());
  append_sized(message, value.data(), value.size());
  send_all(socket_.fd(), message.data(), message.size(), "rendezvous: " + where_);
}

bool TorchrunStore::has(const std::string& key) {
  std::vector<uint8_t> message{kCheck};
  const uint64_t count = 1;
  append(message, &count, sizeof(count));
  append_sized(message, key.data(), key.size());
  send_all(socket_.fd(), message.data(), message.size(), "rendezvous: " + where_);
  uint8_t reply = 0xff;
  check(receive_all(socket_.fd(), &reply, 1), "rendezvous: ", where_, " did not answer a CHECK of '", key,
        "' within ", timeout_seconds_, " s");
  check(reply == kCheckReady || reply == kCheckNotReady, "rendezvous: ", where_, " answered a CHECK with ",
        int(reply), " (expected 0 or 1): is it the store of a PyTorch 2 torchrun?");
  return reply == kCheckReady;
}

void TorchrunStore::wait_for(const std::string& key, double timeout_seconds) {
  const Stopwatch waited;
  while (!has(key)) {
    check(waited.seconds() < timeout_seconds, "rendezvous: '", key, "' was not set in ", where_, " within ",
          timeout_seconds, " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<uint8_t> TorchrunStore::get(const std::string& key, double timeout_seconds) {
  wait_for(key, timeout_seconds);
  send_key(kGet, key);
  uint64_t length = 0;
  check(receive_all(socket_.fd(), &length, sizeof(length)), "rendezvous: ", where_, " did not answer a GET of '",
        key, "'");
  check(length < (uint64_t{1} << 30), "rendezvous: ", where_, " gave a ", length, "-byte value for '", key, "'");
  std::vector<uint8_t> value(length);
  check(receive_all(socket_.fd(), value.data(), value.size()), "rendezvous: ", where_,
        " closed the connection in the middle of '", key, "'");
  return value;
}

}  // namespace ct
