#pragma once
// A single, rewritten status line on a terminal (stderr); silent when stderr is not a terminal,
// so logs and CI output stay clean. Updates are rate-limited.
#include <string>

namespace ct {

class ProgressLine {
 public:
  explicit ProgressLine(double min_interval_seconds = 0.25);
  ~ProgressLine();  // ends the line if anything was drawn
  bool enabled() const { return enabled_; }
  // Redraws the line if the interval has passed (or force is set).
  void update(const std::string& text, bool force = false);
  void finish();  // moves to a new line

 private:
  bool enabled_;
  bool drawn_ = false;
  double min_interval_;
  double last_draw_ = -1e300;
};

}  // namespace ct
