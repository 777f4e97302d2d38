#include "util/progress.h"

#include <unistd.h>

#include <cstdio>

#include "util/clock.h"

namespace ct {

ProgressLine::ProgressLine(double min_interval_seconds)
    : enabled_(::isatty(STDERR_FILENO) == 1), min_interval_(min_interval_seconds) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(const std::string& text, bool force) {
  if (!enabled_) return;
  double now = monotonic_seconds();
  if (!force && now - last_draw_ < min_interval_) return;
  last_draw_ = now;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::finish() {
  if (enabled_ && drawn_) {
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  drawn_ = false;
}

}  // namespace ct
