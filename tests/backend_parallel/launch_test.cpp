// The launch environment: which variables set rank, world size and local rank (errors name them), the
// collectives' limits, and the command that starts the job again.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backend/parallel/launch.h"
#include "backend/parallel/stall.h"
#include "util/error.h"

namespace ct {
namespace {

LaunchEnvironment parse(const std::map<std::string, std::string>& vars) {
  return launch_environment([&](const char* name) -> const char* {
    auto found = vars.find(name);
    return found == vars.end() ? nullptr : found->second.c_str();
  });
}

std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    parse(vars);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LaunchEnvironment, NoVariablesIsOneProcess) {
  LaunchEnvironment env = parse({});
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.launcher, "single");
  EXPECT_FALSE(env.distributed());
}

TEST(LaunchEnvironment, TorchrunVariables) {
  LaunchEnvironment env = parse({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node0"},
                                 {"MASTER_PORT", "29500"}});
  EXPECT_EQ(env.launcher, "torchrun");
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.master_addr, "node0");
  EXPECT_EQ(env.master_port, 29500);
  EXPECT_TRUE(env.distributed());
  EXPECT_FALSE(env.torchrun_agent_store);  // set by hand: rank 0 listens at MASTER_PORT
}

// What torchrun (PyTorch 2.x) sets for its workers: its agent's store holds MASTER_PORT.
TEST(LaunchEnvironment, TorchrunsAgentStoreAndRestartCount) {
  LaunchEnvironment env = parse({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "localhost"},
                                 {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                 {"TORCHELASTIC_RESTART_COUNT", "3"}});
  EXPECT_TRUE(env.torchrun_agent_store);
  EXPECT_EQ(env.restart_count, 3);
  EXPECT_FALSE(parse({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"}}).torchrun_agent_store);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TORCHELASTIC_USE_AGENT_STORE", "yes"}})
                .find("TORCHELASTIC_USE_AGENT_STORE='yes' is neither True nor False"),
            std::string::npos);
  // Only torchrun's own variables count: under mpirun the agent store means nothing.
  EXPECT_FALSE(parse({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"},
                      {"TORCHELASTIC_USE_AGENT_STORE", "True"}})
                   .torchrun_agent_store);
}

TEST(LaunchEnvironment, OpenMpiAndSlurmVariables) {
  LaunchEnvironment mpi = parse({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"CLOCKTRAIN_NCCL_ID_FILE", "/shared/id"}});
  EXPECT_EQ(mpi.launcher, "mpirun");
  EXPECT_EQ(mpi.rank, 3);
  EXPECT_EQ(mpi.local_rank, 3);
  EXPECT_EQ(mpi.id_file, "/shared/id");
  LaunchEnvironment slurm = parse({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"},
                                   {"CLOCKTRAIN_NCCL_ID_FILE", "/shared/id"}});
  EXPECT_EQ(slurm.launcher, "slurm");
  EXPECT_EQ(slurm.world_size, 2);
}

TEST(LaunchEnvironment, TorchrunWinsOverMpi) {
  LaunchEnvironment env = parse({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "2"},
                                 {"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_EQ(env.launcher, "torchrun");
  EXPECT_EQ(env.world_size, 1);
}

TEST(LaunchEnvironment, ErrorsNameTheVariable) {
  EXPECT_NE(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x' is not an integer"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}).find("RANK=2 is outside [0, WORLD_SIZE=2)"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}}).find("WORLD_SIZE is missing"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}).find("LOCAL_RANK"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}})
                .find("TORCHELASTIC_USE_AGENT_STORE=True needs MASTER_ADDR and MASTER_PORT"),
            std::string::npos);
  EXPECT_NE(error_of({{"MASTER_PORT", "70000"}}).find("MASTER_PORT=70000"), std::string::npos);
  EXPECT_NE(error_of({{"CLOCKTRAIN_RENDEZVOUS_TIMEOUT", "-1"}}).find("CLOCKTRAIN_RENDEZVOUS_TIMEOUT"), std::string::npos);
  EXPECT_NE(error_of({{"CLOCKTRAIN_COLLECTIVE_TIMEOUT", "0"}}).find("CLOCKTRAIN_COLLECTIVE_TIMEOUT='0' is not"),
            std::string::npos);
  EXPECT_NE(error_of({{"CLOCKTRAIN_RANK0_TIMEOUT", "soon"}}).find("CLOCKTRAIN_RANK0_TIMEOUT='soon' is not a positive"),
            std::string::npos);
}

// How long a process waits in a collective (stall.h): rank 0 for the others, the others for rank 0.
TEST(LaunchEnvironment, CollectiveLimitsAreRank0sAndTheOthers) {
  const LaunchEnvironment defaults = parse({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                            {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  EXPECT_EQ(defaults.collective_timeout_seconds, 300.0);
  EXPECT_EQ(defaults.rank0_timeout_seconds, 3600.0);
  const std::map<std::string, std::string> set = {{"CLOCKTRAIN_COLLECTIVE_TIMEOUT", "2.5"},
                                                  {"CLOCKTRAIN_RANK0_TIMEOUT", "7"}};
  std::map<std::string, std::string> rank0 = set, rank1 = set;
  rank0.insert({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}});
  rank1.insert({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}});
  const StallLimit on_rank0 = stall_limit(parse(rank0)), on_rank1 = stall_limit(parse(rank1));
  EXPECT_EQ(on_rank0.seconds, 2.5);
  EXPECT_EQ(on_rank0.variable, "CLOCKTRAIN_COLLECTIVE_TIMEOUT");
  EXPECT_EQ(on_rank0.roll_call_seconds, 2.5);  // never longer than the limit itself
  EXPECT_EQ(on_rank1.seconds, 7.0);
  EXPECT_EQ(on_rank1.variable, "CLOCKTRAIN_RANK0_TIMEOUT");
  EXPECT_EQ(on_rank1.roll_call_seconds, 5.0);
  EXPECT_EQ(roll_call_verdict({1}, 2.5),
            "rank 1 did not answer the roll call within 2.5 s: it stopped responding (stopped, hung, or cut off "
            "from rank 0)");
  EXPECT_EQ(rank_list({1, 3}), "ranks 1, 3");
}

// The command that starts the job again: the launcher with the process count and what it needs to
// start at all, then the program as invoked.
TEST(LaunchEnvironment, RelaunchCommandStartsTheSameNumberOfProcesses) {
  const std::vector<std::string> program = {"./build/clocktrain", "train", "r.toml"};
  using Argv = std::vector<std::string>;
  EXPECT_EQ(relaunch_command(parse({}), program, false), program);
  const std::map<std::string, std::string> mpi = {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}};
  EXPECT_EQ(relaunch_command(parse(mpi), program, false),
            (Argv{"mpirun", "-np", "2", "./build/clocktrain", "train", "r.toml"}));
  // as root, Open MPI starts only with --allow-run-as-root (or two variables the shell may not have)
  std::map<std::string, std::string> mpi_options = mpi;
  mpi_options.insert({{"OMPI_MCA_rmaps_base_oversubscribe", "1"}, {"OMPI_MCA_hwloc_base_binding_policy", "none"}});
  EXPECT_EQ(relaunch_command(parse(mpi_options), program, true),
            (Argv{"mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none", "--allow-run-as-root",
                  "./build/clocktrain", "train", "r.toml"}));
  EXPECT_EQ(relaunch_command(parse({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}}), program, false),
            (Argv{"torchrun", "--nproc_per_node", "4", "--no-python", "./build/clocktrain", "train", "r.toml"}));
  EXPECT_EQ(relaunch_command(parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}}), program,
                             false),
            (Argv{"srun", "-n", "2", "./build/clocktrain", "train", "r.toml"}));
}

// The launcher's own command line, when it started this process directly, is repeated whole: the
// placement on several machines is part of the command that continues the job.
TEST(LaunchEnvironment, RelaunchCommandKeepsTheLaunchersOwnOptions) {
  using Argv = std::vector<std::string>;
  const Argv program = {"./build/clocktrain", "train", "r.toml", "--resume", "run/checkpoint"};
  const Argv started_as = {"./build/clocktrain", "train", "r.toml", "--out", "run"};
  const auto with = [&](const Argv& launcher) {
    Argv command = launcher;
    command.insert(command.end(), started_as.begin(), started_as.end());
    return command;
  };
  const Argv resumed_tail = {"./build/clocktrain", "train", "r.toml", "--resume", "run/checkpoint"};
  const auto expect = [&](Argv launcher) {
    launcher.insert(launcher.end(), resumed_tail.begin(), resumed_tail.end());
    return launcher;
  };
  const LaunchEnvironment mpi = parse({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  const Argv hosts = {"/usr/bin/mpirun", "-np", "4", "--host", "a:2,b:2", "--mca", "btl", "tcp,self"};
  EXPECT_EQ(relaunch_command(mpi, program, false, with(hosts), started_as), expect(hosts));
  Argv as_root = hosts;
  as_root.push_back("--allow-run-as-root");
  EXPECT_EQ(relaunch_command(mpi, program, true, with(hosts), started_as), expect(as_root));
  EXPECT_EQ(relaunch_command(mpi, program, true, with(as_root), started_as), expect(as_root)) << "not twice";
  EXPECT_EQ(relaunch_command(mpi, program, false, with({"mpiexec", "-n", "4", "--hostfile", "h"}), started_as),
            expect({"mpiexec", "-n", "4", "--hostfile", "h"}));

  const LaunchEnvironment torch = parse({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}});
  const Argv nodes = {"torchrun", "--nnodes", "2", "--nproc_per_node", "2", "--rdzv_endpoint", "a:29500",
                      "--no-python"};
  EXPECT_EQ(relaunch_command(torch, program, false, with(nodes), started_as), expect(nodes));
  // torchrun's script under its interpreter: the interpreter is left out
  Argv script = nodes;
  script[0] = "/venv/bin/torchrun";
  script.insert(script.begin(), "/venv/bin/python3");
  Argv script_alone(script.begin() + 1, script.end());
  EXPECT_EQ(relaunch_command(torch, program, false, with(script), started_as), expect(script_alone));
  const Argv module = {"python3", "-m", "torch.distributed.run", "--nproc_per_node", "4", "--no-python"};
  EXPECT_EQ(relaunch_command(torch, program, false, with(module), started_as), expect(module));

  // Not the launcher's command that started this process: rebuilt from the environment.
  const Argv rebuilt_mpi = expect({"mpirun", "-np", "4"});
  EXPECT_EQ(relaunch_command(mpi, program, false, {"sh", "-c", "./build/clocktrain train r.toml"}, started_as),
            rebuilt_mpi)
      << "a shell in between";
  EXPECT_EQ(relaunch_command(mpi, program, false, with({"orted", "--hnp-uri", "x"}), started_as), rebuilt_mpi)
      << "started by a remote node's daemon";
  EXPECT_EQ(relaunch_command(mpi, program, false, with(nodes), started_as), rebuilt_mpi) << "another launcher";
  EXPECT_EQ(relaunch_command(mpi, program, false, started_as, started_as), rebuilt_mpi) << "nothing before it";
  EXPECT_EQ(relaunch_command(mpi, program, false, {}, started_as), rebuilt_mpi) << "no parent command line";
  EXPECT_EQ(relaunch_command(parse({}), program, false, with(hosts), started_as), program) << "one process";
}

}  // namespace
}  // namespace ct
