#include "cli/number_options.h"

#include <charconv>
#include <cmath>
#include <string>

#include "util/error.h"
#include "util/threads.h"

namespace ct::cli {

CLI::Validator integer_in(int64_t min, int64_t max) {
  const std::string range =
      max == std::numeric_limits<int64_t>::max() ? str("an integer >= ", min) : str("an integer in [", min, ", ", max, "]");
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, error] = std::from_chars(text.data(), end, value, 10);
        if (text.empty() || error == std::errc::invalid_argument || ptr != end)
          return str("expected ", range, ", got '", text, "'");
        if (error == std::errc::result_out_of_range || value < min || value > max)
          return str("'", text, "' is outside the range: expected ", range);
        return {};
      },
      range);
}

CLI::Validator number_above(double min, bool min_exclusive) {
  const std::string range = str("a finite number ", min_exclusive ? "> " : ">= ", min);
  return CLI::Validator(
      [min, min_exclusive, range](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || ptr != end || !std::isfinite(value) ||
            (min_exclusive ? value <= min : value < min))
          return str("expected ", range, ", got '", text, "'");
        return {};
      },
      range);
}

CLI::Validator thread_count_option() { return integer_in(0, max_thread_count()); }

void add_log_every_options(CLI::App* cmd, double& seconds, int64_t& steps, CLI::Option** seconds_option,
                           CLI::Option** steps_option) {
  CLI::Option* s = cmd->add_option("--log-every-seconds", seconds,
                                   "When stdout is not a terminal: a progress line once this many seconds have "
                                   "passed since the last (0: none by time)")
                       ->check(number_above(0, false))
                       ->capture_default_str();
  CLI::Option* n = cmd->add_option("--log-every-steps", steps,
                                   "When stdout is not a terminal: a progress line every N steps (0: none by steps)")
                       ->check(integer_in(0))
                       ->capture_default_str();
  if (seconds_option) *seconds_option = s;
  if (steps_option) *steps_option = n;
}

}  // namespace ct::cli
