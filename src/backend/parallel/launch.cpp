#include "backend/parallel/launch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/parallel/collectives.h"
#include "util/error.h"

namespace ct {

namespace {

int parse_int(const char* name, const char* text) {
  std::string s(text);
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  check(used > 0 && used == s.size(), "launch environment: ", name, "='", s, "' is not an integer");
  return value;
}

double parse_seconds(const char* name, const char* text) {
  std::string s(text);
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  check(used > 0 && used == s.size() && value > 0, "launch environment: ", name, "='", s,
        "' is not a positive number of seconds");
  return value;
}

}  // namespace

LaunchEnvironment launch_environment(const std::function<const char*(const char*)>& lookup) {
  struct Family {
    const char* launcher;
    const char* rank;
    const char* size;
    const char* local_rank;
  };
  const Family families[] = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
  };
  LaunchEnvironment env;
  for (const Family& f : families) {
    const char* rank = lookup(f.rank);
    const char* size = lookup(f.size);
    if (!rank && !size) continue;
    check(rank && size, "launch environment: ", rank ? f.size : f.rank, " is missing (", rank ? f.rank : f.size,
          " is set)");
    env.launcher = f.launcher;
    env.rank = parse_int(f.rank, rank);
    env.world_size = parse_int(f.size, size);
    const char* local = lookup(f.local_rank);
    env.local_rank = local ? parse_int(f.local_rank, local) : (env.world_size == 1 ? 0 : -1);
    check(env.world_size >= 1, "launch environment: ", f.size, " must be >= 1, got ", env.world_size);
    check(env.rank >= 0 && env.rank < env.world_size, "launch environment: ", f.rank, "=", env.rank,
          " is outside [0, ", f.size, "=", env.world_size, ")");
    check(env.local_rank >= 0, "launch environment: ", f.local_rank,
          " is needed with several processes (it picks the GPU)");
    break;
  }
  if (const char* id_file = lookup("CLOCKTRAIN_NCCL_ID_FILE")) env.id_file = id_file;
  if (const char* addr = lookup("MASTER_ADDR")) env.master_addr = addr;
  if (const char* port = lookup("MASTER_PORT")) {
    env.master_port = parse_int("MASTER_PORT", port);
    check(env.master_port > 0 && env.master_port < 65536, "launch environment: MASTER_PORT=", env.master_port,
          " is not a TCP port");
  }
  if (env.launcher == "torchrun") {
    if (const char* agent = lookup("TORCHELASTIC_USE_AGENT_STORE")) {
      const std::string value(agent);
      check(value == "True" || value == "False", "launch environment: TORCHELASTIC_USE_AGENT_STORE='", value,
            "' is neither True nor False");
      env.torchrun_agent_store = value == "True";
      check(!env.torchrun_agent_store || (!env.master_addr.empty() && env.master_port > 0),
            "launch environment: TORCHELASTIC_USE_AGENT_STORE=True needs MASTER_ADDR and MASTER_PORT (torchrun "
            "sets all three)");
    }
    if (const char* restarts = lookup("TORCHELASTIC_RESTART_COUNT"))
      env.restart_count = parse_int("TORCHELASTIC_RESTART_COUNT", restarts);
  }
  if (const char* timeout = lookup("CLOCKTRAIN_RENDEZVOUS_TIMEOUT"))
    env.timeout_seconds = parse_seconds("CLOCKTRAIN_RENDEZVOUS_TIMEOUT", timeout);
  if (const char* timeout = lookup("CLOCKTRAIN_COLLECTIVE_TIMEOUT"))
    env.collective_timeout_seconds = parse_seconds("CLOCKTRAIN_COLLECTIVE_TIMEOUT", timeout);
  if (const char* timeout = lookup("CLOCKTRAIN_RANK0_TIMEOUT"))
    env.rank0_timeout_seconds = parse_seconds("CLOCKTRAIN_RANK0_TIMEOUT", timeout);
  if (env.launcher == "mpirun") {
    const char* oversubscribe = lookup("OMPI_MCA_rmaps_base_oversubscribe");
    env.mpirun_oversubscribe = oversubscribe && std::string(oversubscribe) == "1";
    if (const char* binding = lookup("OMPI_MCA_hwloc_base_binding_policy")) env.mpirun_binding = binding;
  }
  // Whether the processes can meet is checked by what connects them: the process group for CPU
  // processes (process_group.h), the NCCL id's rendezvous for GPU processes (rendezvous.h).
  return env;
}

bool LaunchEnvironment::id_travels_by_mpi() const { return launcher == "mpirun" && mpi_in_build(); }

std::vector<std::string> launcher_part(const LaunchEnvironment& env, const std::vector<std::string>& launcher_command,
                                       const std::vector<std::string>& started_as) {
  if (started_as.empty() || launcher_command.size() <= started_as.size()) return {};
  if (!std::equal(started_as.rbegin(), started_as.rend(), launcher_command.rbegin())) return {};
  std::vector<std::string> part(launcher_command.begin(),
                                launcher_command.end() - static_cast<std::ptrdiff_t>(started_as.size()));
  const auto name = [&](size_t i) { return i < part.size() ? std::filesystem::path(part[i]).filename().string() : ""; };
  if (env.launcher == "mpirun") {
    const std::string program = name(0);
    return program == "mpirun" || program == "mpiexec" || program == "orterun" ? part : std::vector<std::string>{};
  }
  if (env.launcher == "torchrun") {
    if (name(0) == "torchrun") return part;
    // torchrun's script run by its interpreter: the interpreter is left out (the script is on PATH where
    // torchrun is installed); `python -m torch.distributed.run` is kept as it is.
    if (name(0).rfind("python", 0) == 0) {
      if (name(1) == "torchrun") return std::vector<std::string>(part.begin() + 1, part.end());
      if (part.size() > 2 && part[1] == "-m" && part[2] == "torch.distributed.run") return part;
    }
  }
  return {};
}

std::vector<std::string> relaunch_command(const LaunchEnvironment& env, const std::vector<std::string>& program,
                                          bool as_root, const std::vector<std::string>& launcher_command,
                                          const std::vector<std::string>& started_as) {
  std::vector<std::string> argv;
  if (env.launcher != "single") argv = launcher_part(env, launcher_command, started_as);
  const std::string n = std::to_string(env.world_size);
  if (!argv.empty()) {
    if (env.launcher == "mpirun" && as_root && std::find(argv.begin(), argv.end(), "--allow-run-as-root") == argv.end())
      argv.push_back("--allow-run-as-root");
  } else if (env.launcher == "mpirun") {
    argv = {"mpirun", "-np", n};
    if (env.mpirun_oversubscribe) argv.push_back("--oversubscribe");
    if (!env.mpirun_binding.empty()) argv.insert(argv.end(), {"--bind-to", env.mpirun_binding});
    if (as_root) argv.push_back("--allow-run-as-root");
  } else if (env.launcher == "torchrun") {
    argv = {"torchrun", "--nproc_per_node", n, "--no-python"};
  } else if (env.launcher == "slurm") {
    argv = {"srun", "-n", n};
  }
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

namespace {

// A process's argv from /proc (NUL-separated); empty when it cannot be read.
std::vector<std::string> command_line_of(const std::string& proc_file) {
  std::ifstream in(proc_file, std::ios::binary);
  std::vector<std::string> argv;
  std::string word;
  while (std::getline(in, word, '\0')) argv.push_back(word);
  return argv;
}

}  // namespace

std::vector<std::string> relaunch_command_for_this_process(const LaunchEnvironment& env,
                                                           const std::vector<std::string>& program, bool as_root) {
  return relaunch_command(env, program, as_root, command_line_of("/proc/" + std::to_string(::getppid()) + "/cmdline"),
                          command_line_of("/proc/self/cmdline"));
}

LaunchEnvironment launch_environment_from_process() {
  return launch_environment([](const char* name) -> const char* {
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
  });
}

}  // namespace ct
