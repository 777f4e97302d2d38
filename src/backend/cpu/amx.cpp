#include "backend/cpu/amx.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <string>

#include "backend/cpu/cpu_level.h"
#include "backend/cpu/kernel_switch.h"
#include "util/error.h"

namespace ct {

namespace {

#if defined(__AMX_TILE__) && defined(__AMX_BF16__)
// arch_prctl codes and the XSAVE feature number of AMX's tile data (Linux's asm/prctl.h, which
// older headers lack); only a build with AMX compiled in asks for the permission.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;
#endif

struct AmxState {
  bool usable = false;
  std::string status;
};

AmxState probe() {
  AmxState state;
#if defined(__AMX_TILE__) && defined(__AMX_BF16__)
  if (switched_off("CLOCKTRAIN_CPU_AMX")) {
    state.status = "AMX off (CLOCKTRAIN_CPU_AMX=0)";
    return state;
  }
  if (!cpu_info().has("amx_bf16")) {
    state.status = "no AMX on this CPU";
    return state;
  }
  if (!cpu_level_at_least(CpuLevel::amx)) {
    state.status = str("AMX hidden: the CPU level in use is ", cpu_level_description());
    return state;
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    state.status = "AMX refused by the kernel (arch_prctl ARCH_REQ_XCOMP_PERM)";
    return state;
  }
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0 || !((permitted >> kXfeatureXtiledata) & 1ul)) {
    state.status = "AMX tile data not permitted after the request";
    return state;
  }
  state.usable = true;
  state.status = "AMX bf16 tiles";
#else
  state.status =
      cpu_info().has("amx_bf16") ? "AMX not compiled in (build without -march=native)" : "no AMX on this CPU";
#endif
  return state;
}

const AmxState& amx_state() {
  static AmxState state;
  static std::once_flag once;
  std::call_once(once, [] { state = probe(); });
  return state;
}

}  // namespace

bool amx_usable() { return amx_state().usable; }
std::string amx_status() { return amx_state().status; }

}  // namespace ct
