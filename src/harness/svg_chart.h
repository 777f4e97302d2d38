#pragma once
// The project's SVG chart writer (one file for every chart: the run report's line charts and the
// lab report's scatter charts share the ticks, number formats and escaping below).
//
// render_line_chart, for the report: axes with "nice" ticks (steps of 1, 2 or 5 times a power
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

// render_scatter_chart, for the lab report: scatter series, optional lines through them, and shaded
// bands (noise bands, intervals), styled inline (no stylesheet needed). Self-contained markup: no
// scripts, fonts or network. Text and tooltips go through xml_escape (html.h).
struct ScatterPoint {
  double x = 0, y = 0;
  std::string tooltip;  // shown on hover (an SVG <title>)
};

struct ScatterSeries {
  std::string label, color;
  std::vector<ScatterPoint> points;
  bool draw_line = false;
  bool draw_markers = true;
};

struct ScatterBand {
  std::string label, color;
  double x_low = 0, x_high = 0, y_low = 0, y_high = 0;
  double opacity = 0.15;
};

struct ScatterChart {
  std::string title, x_label, y_label;
  bool x_is_unix_time = false;  // tick labels as UTC dates
  std::vector<ScatterSeries> series;
  std::vector<ScatterBand> bands;
  int width = 760, height = 380;
};

std::string render_scatter_chart(const ScatterChart& chart);

// A distinct colour for series number i (the scatter charts' palette).
std::string palette_color(size_t i);

// Tick positions covering [lo, hi] with about `target` steps of 1, 2 or 5 times a power of ten;
// the first tick is <= lo and the last >= hi. lo < hi required.
std::vector<double> nice_ticks(double lo, double hi, int target);

// Min/max-per-bucket thinning of (x, y) to at most about max_points points, NaNs kept in place.
void thin_series(std::vector<double>& x, std::vector<double>& y, size_t max_points);

}  // namespace ct
