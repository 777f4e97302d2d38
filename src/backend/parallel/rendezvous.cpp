#include "backend/parallel/rendezvous.h"

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "backend/parallel/process_group.h"
#include "backend/parallel/torchrun_store.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {

namespace {

std::vector<uint8_t> exchange_by_file(const LaunchEnvironment& env, const std::vector<uint8_t>& id) {
  if (env.rank == 0) {
    write_file_atomic(env.id_file, std::string_view(reinterpret_cast<const char*>(id.data()), id.size()));
    return id;
  }
  const Stopwatch waited;
  for (;;) {
    std::error_code ec;
    if (std::filesystem::exists(env.id_file, ec) && std::filesystem::file_size(env.id_file, ec) == id.size()) {
      std::vector<uint8_t> bytes = read_file_bytes(env.id_file);
      if (bytes.size() == id.size()) return bytes;
    }
    check(waited.seconds() < env.timeout_seconds, "rendezvous: rank ", env.rank, " waited ", env.timeout_seconds,
          " s for rank 0 to write ", env.id_file, " (", id.size(), " bytes)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
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
  check(env.torchrun_agent_store, "rendezvous: ", env.world_size, " GPU processes launched by ", env.launcher,
        " have no way to share NCCL's id: launch with torchrun (its store) or mpirun, or set "
        "CLOCKTRAIN_NCCL_ID_FILE to a fresh path every process sees");
  return exchange_through_torchrun_store(env, id);
}

}  // namespace ct
