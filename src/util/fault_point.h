#pragma once
// Crash-test hooks. fault_point("checkpoint.staged") does nothing unless the environment variable
// CLOCKTRAIN_KILL_AT names that point: "NAME" kills the process with SIGKILL the first time it passes
// the point, "NAME:N" the N-th time. The crash tests (tests/train/crash_resume_test.cpp) use it to
// kill the trainer at exact moments of a checkpoint write, which random kills hit only by chance.
namespace ct {

void fault_point(const char* name);

}  // namespace ct
