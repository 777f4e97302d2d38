// The collectives over Open MPI (collectives.h), for processes started by mpirun.
//
// A sum: each process sums one contiguous block of the vector over every process, in rank order
// (((x_0 + x_1) + x_2) + ...), and scales it; then every block is copied to every process. Each element
// is added in one place, in one order, so every process gets the same bits (MPI_Allreduce may add in
// a different order on different processes, and the copies of the model would drift apart). With two
// processes each element is a + b, which is exactly what one process adding the same two micro-batches
// computes. The exchange is point-to-point rather than MPI_Ireduce_scatter, which Open MPI 4.1 (libnbc)
// carries out as a reduction of the whole vector on rank 0 and a scatter: twice the traffic, and a
// temporary twice the vector's size.
//
// Every call is non-blocking underneath and completed by polling MPI_Testall with pauses (stall.h):
// MPI's blocking calls spin, so a process waiting for a stopped one would keep a core busy forever.
// The poll also serves the roll call (stall.h): small messages between rank 0 and each process, on
// tags of their own.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include "backend/parallel/collectives.h"
#include "backend/parallel/stall.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/text_format.h"

#if CLOCKTRAIN_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: MPI's deprecated C++ bindings need another library
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace ct {

#if CLOCKTRAIN_HAVE_MPI

namespace {

// Tags of this file's point-to-point messages on MPI_COMM_WORLD (MPI's collectives match apart from them).
constexpr int kTagReduce = 1;    // a sum's first half: block p of every process's vector to process p
constexpr int kTagGather = 2;    // its second half: each summed block to every process
constexpr int kTagQuestion = 3;  // rank 0 -> every other process: the roll call
constexpr int kTagAnswer = 4;    // a process -> rank 0: present (the seconds it has waited)
constexpr int kTagGaveUp = 5;    // a process -> rank 0: it waited its limit (the seconds it waited)

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(str("MPI: ", call, " failed: ", std::string(text, static_cast<size_t>(length))));
}

struct Message {
  int source = 0;
  double seconds = 0;  // the sender's time waited
};

class MpiCollectives final : public Collectives {
 public:
  explicit MpiCollectives(const LaunchEnvironment& env) : limit_(stall_limit(env)) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      // SERIALIZED is enough (one thread in MPI at a time: process_group.h); MULTIPLE is asked for
      // because the process group's worker thread is not the one that initialised MPI.
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
      check(provided >= MPI_THREAD_SERIALIZED, "MPI: the library gives thread level ", provided,
            ", clocktrain needs MPI_THREAD_SERIALIZED or above");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCollectives() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string library_version() const override {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(text, &length);
    std::string s(text, static_cast<size_t>(length));
    const size_t comma = s.find(',');  // "Open MPI v4.1.4, package: ..."
    return comma == std::string::npos ? s : s.substr(0, comma);
  }
  void reduce_sum(float* x, int64_t n, double factor) override { reduce(x, n, factor, MPI_FLOAT); }
  void reduce_sum(double* x, int64_t n, double factor) override { reduce(x, n, factor, MPI_DOUBLE); }
  void broadcast(void* data, int64_t bytes, int root) override {
    char* p = static_cast<char*>(data);
    constexpr int64_t kChunk = int64_t{1} << 30;  // MPI counts are int
    for (int64_t begin = 0; begin < bytes; begin += kChunk) {
      requests_.assign(1, MPI_REQUEST_NULL);
      check_mpi(MPI_Ibcast(p + begin, static_cast<int>(std::min(kChunk, bytes - begin)), MPI_BYTE, root,
                           MPI_COMM_WORLD, &requests_[0]),
                "MPI_Ibcast");
      complete("broadcast");
    }
  }
  void barrier() override {
    requests_.assign(1, MPI_REQUEST_NULL);
    check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &requests_[0]), "MPI_Ibarrier");
    complete("barrier");
  }
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] true
  }

 private:
  template <typename T>
  void reduce(T* data, int64_t n, double factor, MPI_Datatype type) {
    constexpr int64_t kChunk = int64_t{1} << 28;  // MPI counts are int
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      const int64_t count = std::min(kChunk, n - begin);
      T* x = data + begin;
      // block r is x[offsets[r], offsets[r + 1]), summed by process r
      std::vector<int64_t> offsets(static_cast<size_t>(size_) + 1, 0);
      const int64_t base = count / size_, extra = count % size_;
      for (int r = 0; r < size_; ++r) offsets[r + 1] = offsets[r] + base + (r < extra ? 1 : 0);
      const auto length = [&](int r) { return static_cast<int>(offsets[r + 1] - offsets[r]); };
      const int64_t mine = length(rank_);
      T* block = x + offsets[rank_];
      // every other process's copy of this block, one slot per sender
      scratch_.resize(static_cast<size_t>(size_ - 1) * static_cast<size_t>(mine) * sizeof(T));
      T* slots = reinterpret_cast<T*>(scratch_.data());
      const auto slot = [&](int p) { return slots + (p < rank_ ? p : p - 1) * mine; };

      requests_.clear();
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        post(MPI_Irecv(slot(p), static_cast<int>(mine), type, p, kTagReduce, MPI_COMM_WORLD, next_request()),
             "MPI_Irecv");
        post(MPI_Isend(x + offsets[p], length(p), type, p, kTagReduce, MPI_COMM_WORLD, next_request()), "MPI_Isend");
      }
      complete("all-reduce");

      // ((x_0 + x_1) + x_2) + ..., accumulated where x_0's values are, then scaled into the block
      T* sum = rank_ == 0 ? block : slot(0);
      for (int p = 1; p < size_; ++p) {
        const T* add = p == rank_ ? block : slot(p);
        for (int64_t i = 0; i < mine; ++i) sum[i] += add[i];
      }
      const T scale = static_cast<T>(factor);
      if (factor != 1.0)
        for (int64_t i = 0; i < mine; ++i) block[i] = static_cast<T>(sum[i] * scale);
      else if (sum != block)
        std::copy(sum, sum + mine, block);

      requests_.clear();
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        post(MPI_Irecv(x + offsets[p], length(p), type, p, kTagGather, MPI_COMM_WORLD, next_request()), "MPI_Irecv");
        post(MPI_Isend(block, static_cast<int>(mine), type, p, kTagGather, MPI_COMM_WORLD, next_request()),
             "MPI_Isend");
      }
      complete("all-reduce");
    }
  }

  MPI_Request* next_request() {
    requests_.push_back(MPI_REQUEST_NULL);
    return &requests_.back();
  }
  static void post(int code, const char* call) { check_mpi(code, call); }

  // Polls requests_ until all complete. Meanwhile rank 0 hears whether another process gave up, and the
  // others answer rank 0's roll call; past this process's limit, the roll call (which ends the job).
  void complete(const char* what) {
    const Stopwatch waited;
    for (;;) {
      int done = 0;
      check_mpi(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE),
                "MPI_Testall");
      if (done) return;
      if (rank_ == 0) {
        if (const std::optional<Message> gave_up = receive(MPI_ANY_SOURCE, kTagGaveUp))
          roll_call(what, gave_up);
      } else if (receive(0, kTagQuestion)) {
        answer_seconds_ = waited.seconds();
        send_without_waiting(answer_seconds_, 0, kTagAnswer);
      }
      if (waited.seconds() >= limit_.seconds) give_up(what, waited.seconds());
      pause_between_polls(waited.seconds());
    }
  }

  // A message of `tag` from `source` that has arrived, received; none when none has.
  std::optional<Message> receive(int source, int tag) {
    int arrived = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(source, tag, MPI_COMM_WORLD, &arrived, &status), "MPI_Iprobe");
    if (!arrived) return std::nullopt;
    Message m;
    m.source = status.MPI_SOURCE;
    check_mpi(MPI_Recv(&m.seconds, 1, MPI_DOUBLE, m.source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    return m;
  }

  // Sent without waiting for delivery (the receiver may be the process that stopped); `payload` is a
  // member, alive until the send is done.
  void send_without_waiting(const double& payload, int destination, int tag) {
    MPI_Request request;
    check_mpi(MPI_Isend(&payload, 1, MPI_DOUBLE, destination, tag, MPI_COMM_WORLD, &request), "MPI_Isend");
    MPI_Request_free(&request);
  }

  std::string waited_in(const char* what) const {
    return str("rank ", rank_, " of ", size_, ": the ", what, " did not complete within ",
               format_seconds(limit_.seconds), " (", limit_.variable, ")");
  }

  [[noreturn]] void give_up(const char* what, double waited_seconds) {
    if (rank_ == 0) roll_call(what, std::nullopt);
    gave_up_seconds_ = waited_seconds;
    send_without_waiting(gave_up_seconds_, 0, kTagGaveUp);
    const Stopwatch roll;
    while (roll.seconds() < limit_.roll_call_seconds) {
      if (receive(0, kTagQuestion)) {
        // rank 0 heard and names who did not answer; it ends the job (or, failing that, this process does)
        std::this_thread::sleep_for(std::chrono::duration<double>(2 * limit_.roll_call_seconds + 5.0));
        end_job(str(waited_in(what), ", and rank 0 began a roll call but did not end the job"));
      }
      pause_between_polls(limit_.roll_call_seconds);
    }
    end_job(str(waited_in(what), ", and ", rank0_silent_verdict(limit_)));
  }

  // Rank 0: asks every other process whether it is there and names the ones that do not answer.
  [[noreturn]] void roll_call(const char* what, const std::optional<Message>& gave_up) {
    for (int p = 1; p < size_; ++p) send_without_waiting(question_, p, kTagQuestion);
    std::vector<bool> answered(static_cast<size_t>(size_), false);
    answered[0] = true;
    if (gave_up) answered[static_cast<size_t>(gave_up->source)] = true;
    const Stopwatch roll;
    while (std::count(answered.begin(), answered.end(), false) > 0 && roll.seconds() < limit_.roll_call_seconds) {
      for (const int tag : {kTagAnswer, kTagGaveUp})
        while (const std::optional<Message> m = receive(MPI_ANY_SOURCE, tag))
          answered[static_cast<size_t>(m->source)] = true;
      pause_between_polls(limit_.roll_call_seconds);
    }
    std::vector<int> silent;
    for (int p = 1; p < size_; ++p)
      if (!answered[static_cast<size_t>(p)]) silent.push_back(p);
    if (!gave_up) end_job(str(waited_in(what), "; ", roll_call_verdict(silent, limit_.roll_call_seconds)));
    // rank 0 was away from this collective for another process's whole limit (it joined just now)
    end_job(str("rank 0 of ", size_, ": rank ", gave_up->source, " gave up after waiting ",
                format_seconds(gave_up->seconds), " (CLOCKTRAIN_RANK0_TIMEOUT) for rank 0, which was away that long "
                "(stopped, cut off, or working alone for longer than CLOCKTRAIN_RANK0_TIMEOUT)",
                silent.empty() ? std::string() : "; " + roll_call_verdict(silent, limit_.roll_call_seconds)));
  }

  [[noreturn]] void end_job(const std::string& message) {
    std::fprintf(stderr, "clocktrain: error: %s%s\n", message.c_str(), stall_message_end().c_str());
    std::fflush(stderr);
    abort(1);
  }

  StallLimit limit_;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> requests_;  // the call in progress
  std::vector<char> scratch_;          // the other processes' copies of this process's block of a sum
  // the payloads of the roll call's messages, sent without waiting
  const double question_ = 0;
  double answer_seconds_ = 0, gave_up_seconds_ = 0;
};

}  // namespace

bool mpi_in_build() { return true; }
std::unique_ptr<Collectives> make_mpi_collectives(const LaunchEnvironment& env) {
  return std::make_unique<MpiCollectives>(env);
}

#else  // no MPI in this build

bool mpi_in_build() { return false; }
std::unique_ptr<Collectives> make_mpi_collectives(const LaunchEnvironment&) {
  throw Error(
      "CPU processes under mpirun need MPI, and this clocktrain was built without it: install Debian's "
      "libopenmpi-dev (scripts/install-deps.sh does) and build again");
}

#endif

}  // namespace ct
