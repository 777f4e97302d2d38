#pragma once
// A collective that does not complete (docs/parallel.md, "A process that stops responding"): how long
// this process waits in one, how it waits without keeping a core busy, and the words of the verdict.
//
// The limits are asymmetric because only rank 0 ever works alone: it writes the checkpoints, computes
// the held-out losses and prepares `clocktrain run`'s data while the others wait for it in their next
// collective. So rank 0, which only ever waits for processes doing what it does, gives up after
// CLOCKTRAIN_COLLECTIVE_TIMEOUT (300 s); the others wait for rank 0 up to CLOCKTRAIN_RANK0_TIMEOUT
// (3600 s). A process that gives up holds a roll call: rank 0 asks every other process and names those
// that do not answer within roll_call_seconds; another process tells rank 0 and, when rank 0 does not
// answer, names rank 0. Then the job ends (each library's way: collectives.h).
#include <string>
#include <vector>

#include "backend/parallel/launch.h"

namespace ct {

struct StallLimit {
  double seconds = 0;         // how long this process waits in one collective
  std::string variable;       // the variable that sets it, for messages
  double roll_call_seconds = 0;  // how long a roll call waits for answers
};

// This process's limit: CLOCKTRAIN_COLLECTIVE_TIMEOUT on rank 0, CLOCKTRAIN_RANK0_TIMEOUT elsewhere.
StallLimit stall_limit(const LaunchEnvironment& env);

// Sleeps between two polls of a wait that began `waited_seconds` ago: not at all in its first 5 ms
// (the other processes are usually a moment behind), then 1% of the time waited, at most 10 ms. So a
// wait ends at most ~1% later than it could, and a long one costs ~100 polls a second, not a core.
void pause_between_polls(double waited_seconds);

// "rank 1", "ranks 1, 3"
std::string rank_list(const std::vector<int>& ranks);

// What rank 0's roll call found: "rank 1 did not answer within 5 s: it stopped responding (...)", or
// that every process answered.
std::string roll_call_verdict(const std::vector<int>& silent, double roll_call_seconds);

// What another process says when rank 0 did not answer its report within the roll call.
std::string rank0_silent_verdict(const StallLimit& limit);

// "; stopping every process of the job (docs/parallel.md ...)": the end of every stall message.
std::string stall_message_end();

}  // namespace ct
