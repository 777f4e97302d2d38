#include "backend/parallel/stall.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "util/error.h"
#include "util/text_format.h"

namespace ct {

namespace {

// Answers come from processes that poll at least every 10 ms (pause_between_polls), or that reach
// their next collective within this: longer only slows the verdict on a job that is already lost.
constexpr double kRollCallSeconds = 5.0;

}  // namespace

StallLimit stall_limit(const LaunchEnvironment& env) {
  StallLimit limit;
  if (env.rank == 0) {
    limit.seconds = env.collective_timeout_seconds;
    limit.variable = "CLOCKTRAIN_COLLECTIVE_TIMEOUT";
  } else {
    limit.seconds = env.rank0_timeout_seconds;
    limit.variable = "CLOCKTRAIN_RANK0_TIMEOUT";
  }
  limit.roll_call_seconds = std::min(kRollCallSeconds, limit.seconds);
  return limit;
}

void pause_between_polls(double waited_seconds) {
  constexpr double kSpinSeconds = 0.005, kLongestPauseSeconds = 0.010;
  if (waited_seconds < kSpinSeconds) return;
  const double pause = std::min(kLongestPauseSeconds, waited_seconds / 100.0);
  std::this_thread::sleep_for(std::chrono::duration<double>(pause));
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string list = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) list += str(i ? ", " : "", ranks[i]);
  return list;
}

std::string roll_call_verdict(const std::vector<int>& silent, double roll_call_seconds) {
  if (silent.empty())
    return "every process answered the roll call, yet the collective did not complete (are the processes in "
           "different collectives?)";
  return str(rank_list(silent), " did not answer the roll call within ", format_seconds(roll_call_seconds), ": ",
             silent.size() == 1 ? "it" : "they", " stopped responding (stopped, hung, or cut off from rank 0)");
}

std::string rank0_silent_verdict(const StallLimit& limit) {
  return str("rank 0 did not answer within ", format_seconds(limit.roll_call_seconds),
             " more: it stopped responding (stopped, hung, cut off from this process, or working alone for longer "
             "than ", limit.variable, ")");
}

std::string stall_message_end() {
  return "; stopping every process of the job (docs/parallel.md, \"A process that stops responding\")";
}

}  // namespace ct
