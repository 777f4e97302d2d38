#pragma once
// The lab runs its children with util/child_process.h (shared with the harness's evaluator step).
#include "util/child_process.h"

namespace ct::lab {

using ct::ChildResult;
using ct::current_executable;
using ct::run_child;
using ct::shell_join;

}  // namespace ct::lab
