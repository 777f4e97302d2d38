#pragma once
// Number and time formatting shared by the lab's commands (fixed decimals come from
// util/text_format.h, the project's one number formatter; tables from util/text_table.h).
#include <optional>
#include <string>

#include "util/text_format.h"

namespace ct::lab {

// format_fixed(value, decimals), or "-" when empty.
std::string format_optional(const std::optional<double>& value, int decimals);
// "2026-11-30 12:00:00" UTC.
std::string format_unix_time(double unix_seconds);

}  // namespace ct::lab
