#pragma once
// Numeric command-line values read exactly. CLI11 2.1 (Debian 12's) converts integers with strtoll /
// strtoull in base 0 and keeps what overflows clamped: a seed of 2^64 became 2^63 - 1, "010" is
// octal 8, and an unsigned option takes "-1" as 2^64 - 1. These validators see the text first and
// admit only a decimal integer (or a finite number) in the option's range, so nothing given is
// silently changed; a value outside is refused naming the option, as CLI11's refusals are (exit 1).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>

namespace ct::cli {

// A decimal integer in [min, max].
CLI::Validator integer_in(int64_t min, int64_t max = std::numeric_limits<int64_t>::max());
// A finite number > min (min_exclusive) or >= min.
CLI::Validator number_above(double min, bool min_exclusive);

// The range of seeds: what a recipe's TOML integer can hold (run.seed), so that every seed given on
// the command line can be written back into a recipe.
inline constexpr int64_t kMaxSeed = std::numeric_limits<int64_t>::max();

// --threads: 0 (every core) up to util/threads.h max_thread_count().
CLI::Validator thread_count_option();

// --log-every-seconds S and --log-every-steps N of train and run: the progress lines written when
// stdout is not a terminal (train/trainer.h TrainOptions). The options are returned through the
// pointers when given (to tell "given" from the default).
void add_log_every_options(CLI::App* cmd, double& seconds, int64_t& steps, CLI::Option** seconds_option = nullptr,
                           CLI::Option** steps_option = nullptr);

}  // namespace ct::cli
