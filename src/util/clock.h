#pragma once
// Monotonic wall-clock time in seconds, for budgets and throughput.
#include <chrono>
#include <string>

namespace ct {

inline double monotonic_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Measures elapsed seconds since construction or the last restart().
class Stopwatch {
 public:
  Stopwatch() : start_(monotonic_seconds()) {}
  void restart() { start_ = monotonic_seconds(); }
  double seconds() const { return monotonic_seconds() - start_; }

 private:
  double start_;
};

// Seconds since the Unix epoch (UTC), for timestamps in records.
inline double unix_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// The UTC time `unix_seconds` written by strftime's `format` (e.g. "%Y%m%d-%H%M%S" for run folders).
std::string utc_text(double unix_seconds, const char* format);

}  // namespace ct
