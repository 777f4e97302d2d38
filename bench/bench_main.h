#pragma once
// The body of a bench's main(): runs it, and turns an exception into "NAME: error: ..." on stderr and
// exit status 1 (a bench's own usage errors return 2 from `run`).
#include <cstdio>
#include <exception>

namespace ct::bench {

template <typename Run>
int guarded_main(const char* name, Run&& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace ct::bench
