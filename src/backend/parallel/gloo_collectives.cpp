// The collectives over Gloo (collectives.h), for CPU processes started by torchrun.
//
// The processes meet as PyTorch's own CPU backend makes them meet: each puts the address of its Gloo
// TCP device into torchrun's store (torchrun_store.h), reads everybody else's, and connects to each
// (a full mesh). The keys are under clocktrain/gloo/restart_<TORCHELASTIC_RESTART_COUNT>/, so workers
// that torchrun restarts never read an earlier generation's addresses.
//
// The device listens on the address this host uses to reach MASTER_ADDR (or on GLOO_SOCKET_IFNAME's
// interface when set, as in PyTorch), so one machine or several work alike.
//
// Sums use Gloo's ring all-reduce: each segment is summed along the ring, in ring order, by the
// processes in turn, and the finished segment is then copied to every process, so every process ends
// with the same bits (with two processes each element is a + b). The scale is applied afterwards by
// each process to the same numbers, which gives the same bits too.
//
// A collective waits at most this process's limit (stall.h; Gloo waits on condition variables, so
// idly). A lost process (killed, or stopped by an error) closes its connections, and every collective
// that waits for it fails with Gloo's I/O error; a collective past its limit fails too, and Gloo then
// closes this process's connections, so the others' collectives fail at once. Either way the process
// holds the roll call of stall.h in torchrun's store (each process that failed sets
// clocktrain/gloo/restart_<N>/roll_call/<rank>; rank 0 names the ranks that did not, another process
// says whether rank 0 did), prints the verdict and exits: Gloo has no abort, and torchrun stops the
// other workers when one fails.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "backend/parallel/collectives.h"
#include "backend/parallel/stall.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/text_format.h"

#if CLOCKTRAIN_HAVE_GLOO
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "backend/parallel/tcp_socket.h"
#include "backend/parallel/torchrun_store.h"
#endif

namespace ct {

#if CLOCKTRAIN_HAVE_GLOO

namespace {

// gloo::rendezvous::Store over torchrun's store: waits poll the store until every key is set.
class TorchrunGlooStore final : public gloo::rendezvous::Store {
 public:
  explicit TorchrunGlooStore(const LaunchEnvironment& env)
      : store_(env.master_addr, env.master_port, env.timeout_seconds), timeout_seconds_(env.timeout_seconds) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::vector<uint8_t> value = store_.get(key, timeout_seconds_);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override {
    wait(keys, std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds_ * 1000)));
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    // one deadline for all the keys
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (const std::string& key : keys)
      store_.wait_for(key, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
  }

 private:
  TorchrunStore store_;
  double timeout_seconds_;
};

// The local address of the route to host:port (a UDP socket "connected" there sends nothing).
std::string local_address_towards(const std::string& host, int port) {
  const sockaddr_in remote = resolve_ipv4(host, port, "MASTER_ADDR");
  TcpSocket probe(::socket(AF_INET, SOCK_DGRAM, 0));  // an owned descriptor; UDP here
  check(probe.open() && ::connect(probe.fd(), reinterpret_cast<const sockaddr*>(&remote), sizeof(remote)) == 0,
        "Gloo: no route from this host to MASTER_ADDR ", host);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  check(::getsockname(probe.fd(), reinterpret_cast<sockaddr*>(&local), &length) == 0,
        "Gloo: cannot tell this host's address towards MASTER_ADDR ", host);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return text;
}

class GlooCollectives final : public Collectives {
 public:
  explicit GlooCollectives(const LaunchEnvironment& env)
      : rank_(env.rank),
        size_(env.world_size),
        limit_(stall_limit(env)),
        collective_timeout_(static_cast<int64_t>(limit_.seconds * 1000)),
        store_host_(env.master_addr),
        store_port_(env.master_port),
        roll_call_prefix_(str("clocktrain/gloo/restart_", env.restart_count, "/roll_call/")) {
    check(env.torchrun_agent_store, "Gloo: CPU processes with torchrun's variables meet in torchrun's store "
          "(TORCHELASTIC_USE_AGENT_STORE=True, which torchrun sets); these variables were set otherwise: launch "
          "with torchrun, or with mpirun");
    gloo::transport::tcp::attr attr;
    if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) {
      attr.iface = iface;
      where_ = str("interface ", iface);
    } else {
      attr.hostname = local_address_towards(env.master_addr, env.master_port);
      where_ = attr.hostname;
    }
    attr.ai_family = AF_INET;
    try {
      auto device = gloo::transport::tcp::CreateDevice(attr);
      TorchrunGlooStore store(env);
      gloo::rendezvous::PrefixStore prefixed(str("clocktrain/gloo/restart_", env.restart_count), store);
      context_ = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      context_->setTimeout(std::chrono::milliseconds(static_cast<int64_t>(env.timeout_seconds * 1000)));
      context_->connectFullMesh(prefixed, device);
      context_->setTimeout(collective_timeout_);
    } catch (const std::exception& e) {
      // (each rank's address is under the key .../<rank>: a key not set names a rank that never came)
      throw Error(str("Gloo: rank ", rank_, " of ", size_, " could not connect to the others (listening on ", where_,
                      ", meeting in torchrun's store at ", env.master_addr, ":", env.master_port,
                      ", where each rank puts its address under .../<rank>): ", e.what()));
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string library_version() const override {
    return str("Gloo ", GLOO_VERSION_MAJOR, ".", GLOO_VERSION_MINOR, ".", GLOO_VERSION_PATCH, " over TCP");
  }
  void reduce_sum(float* x, int64_t n, double factor) override { reduce(x, n, factor); }
  void reduce_sum(double* x, int64_t n, double factor) override { reduce(x, n, factor); }
  void broadcast(void* data, int64_t bytes, int root) override {
    if (bytes == 0) return;
    guarded("broadcast", [&] {
      gloo::BroadcastOptions options(context_);
      options.setOutput(static_cast<uint8_t*>(data), static_cast<size_t>(bytes));
      options.setRoot(root);
      options.setTimeout(collective_timeout_);
      gloo::broadcast(options);
    });
  }
  void barrier() override {
    guarded("barrier", [&] {
      gloo::BarrierOptions options(context_);
      options.setTimeout(collective_timeout_);
      gloo::barrier(options);
    });
  }
  [[noreturn]] void abort(int exit_code) override {
    // Gloo has no abort: this process ends, its connections close, and every other process's next
    // collective fails on them (above), so each stops in turn; torchrun also stops the others.
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }

 private:
  template <typename T>
  void reduce(T* x, int64_t n, double factor) {
    if (n == 0) return;
    guarded("all-reduce", [&] {
      gloo::AllreduceOptions options(context_);
      options.setOutput(x, static_cast<size_t>(n));
      options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      options.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<T>));
      options.setTimeout(collective_timeout_);
      gloo::allreduce(options);
    });
    if (factor != 1.0)
      for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(x[i] * static_cast<T>(factor));
  }

  // Gloo reports a lost peer and a collective past its timeout with its own exceptions.
  template <typename Fn>
  void guarded(const char* what, Fn&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
  }

  [[noreturn]] void fail(const char* what, const std::string& error) {
    const bool timed_out = error.find("Timed out") != std::string::npos;  // gloo::transport's wording
    const std::string cause =
        timed_out ? str("Gloo: ", what, " on rank ", rank_, " of ", size_, " did not complete within ",
                        format_seconds(limit_.seconds), " (", limit_.variable, "): ", error)
                  : str("Gloo: ", what, " on rank ", rank_, " of ", size_,
                        " failed (a process of the job stopped or cannot be reached): ", error);
    const std::string verdict = roll_call();
    std::fprintf(stderr, "clocktrain: error: %s; %s%s\n", cause.c_str(), verdict.c_str(), stall_message_end().c_str());
    std::fflush(nullptr);
    std::_Exit(1);
  }

  // The roll call of stall.h in torchrun's store: this process's key, then rank 0 waits for the
  // others' and another process for rank 0's.
  std::string roll_call() {
    constexpr auto kStorePoll = std::chrono::milliseconds(50);
    try {
      TorchrunStore store(store_host_, store_port_, limit_.roll_call_seconds);
      store.set(roll_call_prefix_ + std::to_string(rank_), {1});
      const Stopwatch roll;
      if (rank_ != 0) {
        while (!store.has(roll_call_prefix_ + "0")) {
          if (roll.seconds() >= limit_.roll_call_seconds) return rank0_silent_verdict(limit_);
          std::this_thread::sleep_for(kStorePoll);
        }
        return "rank 0 answered the roll call, and names the processes that did not";
      }
      std::vector<int> silent;
      for (int p = 1; p < size_; ++p) silent.push_back(p);
      while (!silent.empty()) {
        std::erase_if(silent, [&](int p) { return store.has(roll_call_prefix_ + std::to_string(p)); });
        if (silent.empty() || roll.seconds() >= limit_.roll_call_seconds) break;
        std::this_thread::sleep_for(kStorePoll);
      }
      return roll_call_verdict(silent, limit_.roll_call_seconds);
    } catch (const std::exception& e) {
      return str("no roll call could be held (", e.what(), ")");
    }
  }

  int rank_, size_;
  StallLimit limit_;
  std::chrono::milliseconds collective_timeout_;
  std::string store_host_;  // torchrun's store, where the roll call is held
  int store_port_;
  std::string roll_call_prefix_;
  std::string where_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
};

}  // namespace

std::unique_ptr<Collectives> make_gloo_collectives(const LaunchEnvironment& env) {
  return std::make_unique<GlooCollectives>(env);
}

#else  // no Gloo in this build

std::unique_ptr<Collectives> make_gloo_collectives(const LaunchEnvironment&) {
  throw Error(
      "CPU processes under torchrun need Gloo, and this clocktrain was built without it: install Debian's "
      "libgloo-dev (scripts/install-deps.sh does) and build again, or launch with mpirun");
}

#endif

}  // namespace ct
