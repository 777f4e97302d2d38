#include "util/text_format.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace ct {

namespace {
std::string non_finite(double x) {
  if (std::isnan(x)) return "NaN";
  return x > 0 ? "Inf" : "-Inf";
}
}  // namespace

std::string format_fixed(double x, int decimals) {
  if (!std::isfinite(x)) return non_finite(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return non_finite(seconds) + " s";
  std::string s = format_fixed(seconds, 3);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s + " s";
}

std::string format_number(double x) {
  if (!std::isfinite(x)) return non_finite(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -(n + 1) + 1ULL : static_cast<unsigned long long>(n));
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count && count % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return n < 0 ? "-" + out : out;
}

std::string format_si(double x) {
  if (!std::isfinite(x)) return non_finite(x);
  static const char* prefixes[] = {"", " k", " M", " G", " T", " P", " E"};
  double a = std::fabs(x);
  int index = 0;
  while (a >= 999.5 && index < 6) {
    a /= 1000;
    x /= 1000;
    ++index;
  }
  char buf[64];
  int decimals = a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, x, prefixes[index]);
  return buf;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return non_finite(seconds);
  // Rounded down, so a clock just under its budget never reads as equal to it.
  char buf[64];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", std::floor(seconds * 10) / 10);
  } else if (seconds < 3600) {
    long s = static_cast<long>(std::floor(seconds));
    std::snprintf(buf, sizeof buf, "%ldm %02lds", s / 60, s % 60);
  } else {
    long m = static_cast<long>(std::floor(seconds / 60));
    std::snprintf(buf, sizeof buf, "%ldh %02ldm", m / 60, m % 60);
  }
  return buf;
}

}  // namespace ct
