#pragma once
// How a data-parallel job was launched: one process per device, each told its place by the
// launcher's environment variables (docs/cuda.md "Several GPUs").
//   torchrun-style:  RANK, WORLD_SIZE, LOCAL_RANK (and MASTER_ADDR, MASTER_PORT)
//   Open MPI:        OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
//   Slurm (srun):    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
// The first family present wins, in that order; none means one process. CPU processes train
// together under mpirun (MPI) or torchrun (Gloo): process_group.h. With more than one GPU process
// the NCCL unique id travels by MPI under mpirun (when the build has MPI), through torchrun's store
// under torchrun, or through CLOCKTRAIN_NCCL_ID_FILE (a fresh path on a file system every process
// sees): rendezvous.h.
#include <functional>
#include <string>
#include <vector>

namespace ct {

struct LaunchEnvironment {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string launcher = "single";  // "single", "torchrun", "mpirun", "slurm"
  std::string id_file;              // CLOCKTRAIN_NCCL_ID_FILE
  std::string master_addr;          // MASTER_ADDR
  int master_port = 0;              // MASTER_PORT
  // TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent serves a key-value store at
  // MASTER_ADDR:MASTER_PORT (torchrun_store.h), where the processes meet.
  bool torchrun_agent_store = false;
  int restart_count = 0;            // TORCHELASTIC_RESTART_COUNT: how often torchrun restarted the workers
  double timeout_seconds = 300.0;   // CLOCKTRAIN_RENDEZVOUS_TIMEOUT: how long ranks wait to meet
  // How long a process waits in one collective before it holds a roll call and ends the job (stall.h):
  double collective_timeout_seconds = 300.0;  // CLOCKTRAIN_COLLECTIVE_TIMEOUT: rank 0, for the others
  double rank0_timeout_seconds = 3600.0;      // CLOCKTRAIN_RANK0_TIMEOUT: the others, for rank 0
  // What `mpirun` was given that decides whether and how it starts the job again (relaunch_command):
  // --oversubscribe (OMPI_MCA_rmaps_base_oversubscribe=1) and --bind-to (OMPI_MCA_hwloc_base_binding_policy).
  bool mpirun_oversubscribe = false;
  std::string mpirun_binding;
  bool distributed() const { return world_size > 1; }
  bool id_travels_by_mpi() const;  // mpirun, and this build has MPI
};

// Reads the variables through `lookup` (returns nullptr when unset). Errors name the variable.
LaunchEnvironment launch_environment(const std::function<const char*(const char*)>& lookup);
LaunchEnvironment launch_environment_from_process();  // std::getenv

// `program` (argv[0] as invoked, then its arguments) as the command that starts this job again on
// as many processes, launcher first. When `launcher_command` is the launcher's own command line that
// started this process (`started_as`: this process's argv), its launcher part is kept whole, placement
// (mpirun's --host or --hostfile, torchrun's --nnodes and --rdzv options) included. Otherwise the
// launch is rebuilt from the environment: `mpirun -np N` (with the --oversubscribe and --bind-to it
// was given), `torchrun --nproc_per_node N --no-python`, `srun -n N`; this machine, as many processes.
// Under mpirun as root, --allow-run-as-root is added when missing (Open MPI refuses root without it,
// unless two variables say otherwise). `program` alone for one process.
std::vector<std::string> relaunch_command(const LaunchEnvironment& env, const std::vector<std::string>& program,
                                          bool as_root, const std::vector<std::string>& launcher_command = {},
                                          const std::vector<std::string>& started_as = {});

// The launcher part of `launcher_command` (everything before `started_as`), when it ends with
// `started_as` and its program is env's launcher (mpirun, mpiexec or orterun; torchrun, also as
// `python .../torchrun` or `python -m torch.distributed.run`); empty otherwise (e.g. a shell between
// the launcher and this process, or rank 0 started by a remote node's daemon).
std::vector<std::string> launcher_part(const LaunchEnvironment& env, const std::vector<std::string>& launcher_command,
                                       const std::vector<std::string>& started_as);

// relaunch_command with the parent process's command line (/proc/<ppid>/cmdline) as the launcher's and
// this process's own (/proc/self/cmdline) as started_as.
std::vector<std::string> relaunch_command_for_this_process(const LaunchEnvironment& env,
                                                           const std::vector<std::string>& program, bool as_root);

}  // namespace ct
