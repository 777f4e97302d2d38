#include "util/fault_point.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace ct {

namespace {

struct KillAt {
  std::string name;   // empty: no fault point armed
  long passage = 1;   // kill on this passage (1 = the first)
  long seen = 0;
};

KillAt& armed() {
  static KillAt at = [] {
    KillAt a;
    const char* spec = std::getenv("CLOCKTRAIN_KILL_AT");
    if (spec == nullptr || *spec == '\0') return a;
    a.name = spec;
    const size_t colon = a.name.rfind(':');
    if (colon != std::string::npos) {
      a.passage = std::strtol(a.name.c_str() + colon + 1, nullptr, 10);
      a.name.resize(colon);
    }
    return a;
  }();
  return at;
}

}  // namespace

void fault_point(const char* name) {
  KillAt& at = armed();
  if (at.name.empty() || at.name != name) return;
  if (++at.seen < at.passage) return;
  ::kill(::getpid(), SIGKILL);
  ::pause();  // SIGKILL is delivered before kill() returns to a single thread; never reached
}

}  // namespace ct
