#include "lab/formatting.h"

#include "util/clock.h"

namespace ct::lab {

std::string format_optional(const std::optional<double>& value, int decimals) {
  return value ? format_fixed(*value, decimals) : "-";
}

std::string format_unix_time(double unix_seconds) {
  return utc_text(unix_seconds, "%Y-%m-%d %H:%M:%S");
}

}  // namespace ct::lab
