#pragma once
// Number formatting for logs, evidence text, tables, charts and the report (every layer uses these,
// none writes its own): locale-independent, and explicit about values that are not finite ("NaN",
// "Inf") instead of printing garbage.
#include <cstdint>
#include <string>

namespace ct {

// Fixed decimals: format_fixed(1.73449, 4) == "1.7345"; non-finite -> "NaN", "Inf", "-Inf".
std::string format_fixed(double x, int decimals);
// Up to 3 decimals, trailing zeros dropped, with the unit: "600 s", "597.9 s", "600.04 s".
std::string format_seconds(double seconds);
// Shortest round-trip-ish form for evidence: "0.1", "1e-05", "NaN".
std::string format_number(double x);
// Thousands separated: 7340032 -> "7,340,032".
std::string format_count(int64_t n);
// SI prefix with 3 significant digits: 2.1e11 -> "210 G", 4711.2 -> "4.71 k", 0.41 -> "0.41".
std::string format_si(double x);
// A duration for people, rounded down: 75 -> "1m 15s", 3725 -> "1h 02m", 12.36 -> "12.3s".
std::string format_duration(double seconds);

}  // namespace ct
