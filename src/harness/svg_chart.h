#pragma once
// A small SVG line chart for the report: axes with "nice" ticks (steps of 1, 2 or 5 times a power
// of ten), gridlines, axis labels, a title and a legend. Empty series, a single point, constant
// values and NaN/Inf values are all drawn sensibly: a non-finite y breaks the line and is marked
// with a red span on the top edge; an isolated finite point is drawn as a dot; a chart without any
// finite point says so. Long series are thinned to at most max_points per series by keeping each
// bucket's minimum and maximum, so spikes survive. The output is well-formed XML.
#include <string>
#include <vector>

namespace ct {

enum class AxisFormat {
  number,    // 1.5, 0.02, 1200
  si,        // 4.7k, 210G
  percent,   // 0.41 -> 41%
  duration,  // seconds shown in s, min or h (the unit goes into the axis label)
};

struct ChartSeries {
  std::string name;
  std::string color;  // a CSS colour from the caller's palette (never from a file)
  std::vector<double> x, y;
  bool dashed = false;
  bool markers = false;  // a dot on every point (sparse series such as held-out evaluations)
  bool mark_nonfinite = true;  // false where a missing value means "unknown", not NaN (MFU)
};

struct ChartMarker {
  double x = 0;
  std::string label;  // a vertical dashed line, e.g. the budget
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  AxisFormat x_format = AxisFormat::duration;
  AxisFormat y_format = AxisFormat::number;
  bool x_from_zero = true;   // include 0 in the x domain
  bool y_from_zero = false;  // include 0 in the y domain
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> x_markers;
  std::string empty_text = "no data";
  int width = 560;
  int height = 300;
  size_t max_points = 1500;
};

std::string render_line_chart(const LineChart& chart);

// Tick positions covering [lo, hi] with about `target` steps of 1, 2 or 5 times a power of ten;
// the first tick is <= lo and the last >= hi. lo < hi required.
std::vector<double> nice_ticks(double lo, double hi, int target);

// Min/max-per-bucket thinning of (x, y) to at most about max_points points, NaNs kept in place.
void thin_series(std::vector<double>& x, std::vector<double>& y, size_t max_points);

}  // namespace ct
