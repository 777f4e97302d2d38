#pragma once
// A small inline-SVG chart writer for the lab report: scatter series, optional lines through them,
// and shaded bands (noise bands, intervals). Self-contained markup: no scripts, fonts or network.
#include <string>
#include <string_view>
#include <vector>

namespace ct::lab {

struct ChartPoint {
  double x = 0, y = 0;
  std::string tooltip;  // shown on hover (an SVG <title>)
};

struct ChartSeries {
  std::string label, color;
  std::vector<ChartPoint> points;
  bool draw_line = false;
  bool draw_markers = true;
};

struct ChartBand {
  std::string label, color;
  double x_low = 0, x_high = 0, y_low = 0, y_high = 0;
  double opacity = 0.15;
};

struct Chart {
  std::string title, x_label, y_label;
  bool x_is_unix_time = false;  // tick labels as UTC dates
  std::vector<ChartSeries> series;
  std::vector<ChartBand> bands;
  int width = 760, height = 380;
};

std::string render_svg(const Chart& chart);

// Escapes & < > " ' for XML text and attributes.
std::string escape_xml(std::string_view text);

// A distinct colour for series number i.
std::string palette_color(size_t i);

}  // namespace ct::lab
