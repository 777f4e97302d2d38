#pragma once
// SIGINT and SIGTERM while a run trains (docs/train.md "Stopping"): the handler only records the
// signal; the training loop polls received(), stops before the next step and writes the final
// checkpoint and the summary. SA_RESETHAND: a second signal terminates the process at once (the
// checkpoint folder is replaced atomically, so even that leaves the previous checkpoint readable).
//
// The handler runs on a stack of its own, never on the interrupted code's: with the frame pushed onto
// the thread's own stack, a signal that landed inside oneDNN's sgemm corrupted the process (a heap
// check's abort or a segfault in 2-3 of 30 signalled runs at the avx2 level; none in 60 with the
// alternate stack): its JIT code evidently keeps data below the stack pointer. An alternate stack is
// per thread, so the threads of OpenMP's pool block both signals while this object lives, and the
// kernel delivers them to the thread that created it (the pool's first thread), which has one.
#include <signal.h>

namespace ct {

class StopSignals {
 public:
  StopSignals();   // installs the handler; the calling thread must be OpenMP's initial thread
  ~StopSignals();  // restores the previous handlers, alternate stack and the pool's signal masks
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  int received() const;  // SIGINT or SIGTERM once one has arrived, else 0

 private:
  struct sigaction previous_int_ {}, previous_term_ {};
  stack_t previous_stack_{};
};

}  // namespace ct
