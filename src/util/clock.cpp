#include "util/clock.h"

#include <ctime>

namespace ct {

std::string utc_text(double unix_seconds, const char* format) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[64];
  const size_t n = std::strftime(buffer, sizeof(buffer), format, &tm);
  return std::string(buffer, n);
}

}  // namespace ct
