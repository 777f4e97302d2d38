#include "util/stop_signals.h"

#include <omp.h>
#include <pthread.h>

#include <atomic>
#include <memory>

namespace ct {

namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void record_stop_signal(int signo) { g_stop_signal.store(signo); }

// Room for the signal frame, which holds the thread's whole XSAVE state (with AMX tile data, more
// than 11 KB), and the handler's own few bytes.
constexpr size_t kAlternateStackBytes = 256 * 1024;

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// how: SIG_BLOCK or SIG_UNBLOCK, on every thread of OpenMP's pool but the calling one.
void mask_in_pool_workers(int how) {
  const sigset_t set = stop_signal_set();
#pragma omp parallel
  {
    if (omp_get_thread_num() != 0) pthread_sigmask(how, &set, nullptr);
  }
}

}  // namespace

StopSignals::StopSignals() {
  g_stop_signal.store(0);
  static const std::unique_ptr<char[]> alternate_stack(new char[kAlternateStackBytes]);
  stack_t stack{};
  stack.ss_sp = alternate_stack.get();
  stack.ss_size = kAlternateStackBytes;
  ::sigaltstack(&stack, &previous_stack_);
  mask_in_pool_workers(SIG_BLOCK);
  struct sigaction action {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  ::sigaction(SIGINT, &action, &previous_int_);
  ::sigaction(SIGTERM, &action, &previous_term_);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &previous_int_, nullptr);
  ::sigaction(SIGTERM, &previous_term_, nullptr);
  mask_in_pool_workers(SIG_UNBLOCK);
  ::sigaltstack(&previous_stack_, nullptr);
}

int StopSignals::received() const { return g_stop_signal.load(); }

}  // namespace ct
