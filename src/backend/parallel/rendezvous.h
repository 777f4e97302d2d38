#pragma once
// Hands rank 0's bytes (NCCL's unique id) to every process of a job, before NCCL exists.
// - MPI (mpirun, and the build has MPI): MPI_Bcast from rank 0 (process_group.h).
// The ways below are for launches without MPI (torchrun, Slurm's srun). Each uses a meeting point
// the launcher or the user provides; nothing here listens on a port of its own.
// - File (env.id_file set): rank 0 writes it atomically; the others poll until it appears with
//   the expected size. The path must be fresh for each job (a stale file would be read as the id):
//   launchers put the job id in it (docs/cuda.md).
// - torchrun's store (env.torchrun_agent_store: torchrun's agent serves it at MASTER_ADDR:MASTER_PORT):
//   rank 0 sets the key clocktrain/nccl_id/restart_<TORCHELASTIC_RESTART_COUNT>, the others wait for
//   it (torchrun_store.h).
// Anything else (torchrun's variables set by hand, srun without the file) is an error naming both.
// Either way a rank that waits longer than env.timeout_seconds gets a ct::Error naming the source.
#include <cstdint>
#include <vector>

#include "backend/parallel/launch.h"

namespace ct {

// `id` is used on rank 0 (its size on every rank); returns rank 0's bytes on every rank.
std::vector<uint8_t> exchange_id(const LaunchEnvironment& env, const std::vector<uint8_t>& id);

}  // namespace ct
