#include "lab/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "util/clock.h"

namespace ct::lab {

namespace {

struct Range {
  double low = std::numeric_limits<double>::infinity(), high = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  bool valid() const { return low <= high; }
};

// Tick spacing of 1, 2 or 5 times a power of ten giving about `target` ticks.
double nice_step(double span, int target) {
  double raw = span / target;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double fraction = raw / magnitude;
  double nice = fraction < 1.5 ? 1 : fraction < 3.5 ? 2 : fraction < 7.5 ? 5 : 10;
  return nice * magnitude;
}

std::string number_label(double v, double step) {
  char buffer[48];
  int decimals = step >= 1 ? 0 : std::min(8, static_cast<int>(std::ceil(-std::log10(step))));
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, v);
  return buffer;
}

std::string time_label(double unix_seconds, double span) {
  return utc_text(unix_seconds, span > 2 * 86400 ? "%m-%d" : span > 600 ? "%m-%d %H:%M" : "%H:%M:%S");
}

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", v);
  return buffer;
}

}  // namespace

std::string escape_xml(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string palette_color(size_t i) {
  static const std::array<const char*, 8> kColors = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                     "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
  return kColors[i % kColors.size()];
}

std::string render_svg(const Chart& chart) {
  const double left = 70, right = 170, top = 34, bottom = 50;
  const double plot_w = chart.width - left - right, plot_h = chart.height - top - bottom;
  Range xr, yr;
  for (const auto& s : chart.series)
    for (const auto& p : s.points) {
      xr.add(p.x);
      yr.add(p.y);
    }
  for (const auto& b : chart.bands) {
    xr.add(b.x_low);
    xr.add(b.x_high);
    yr.add(b.y_low);
    yr.add(b.y_high);
  }
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(chart.width) +
                    "\" height=\"" + std::to_string(chart.height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<text x=\"" + num(left) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" + escape_xml(chart.title) +
         "</text>\n";
  if (!xr.valid() || !yr.valid()) return svg + "<text x=\"" + num(left) + "\" y=\"60\">no data</text>\n</svg>\n";
  // Pad the ranges so that points do not sit on the frame.
  double xpad = xr.high > xr.low ? 0.05 * (xr.high - xr.low) : std::max(1.0, std::fabs(xr.low) * 0.05);
  double ypad = yr.high > yr.low ? 0.08 * (yr.high - yr.low) : std::max(1e-3, std::fabs(yr.low) * 0.02);
  double x0 = xr.low - xpad, x1 = xr.high + xpad, y0 = yr.low - ypad, y1 = yr.high + ypad;
  auto sx = [&](double x) { return left + (x - x0) / (x1 - x0) * plot_w; };
  auto sy = [&](double y) { return top + (1.0 - (y - y0) / (y1 - y0)) * plot_h; };

  svg += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(plot_w) + "\" height=\"" +
         num(plot_h) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  double ystep = nice_step(y1 - y0, 6);
  for (double y = std::ceil(y0 / ystep) * ystep; y <= y1; y += ystep) {
    svg += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + plot_w) + "\" y1=\"" + num(sy(y)) + "\" y2=\"" +
           num(sy(y)) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + num(left - 6) + "\" y=\"" + num(sy(y) + 4) + "\" text-anchor=\"end\">" +
           number_label(y, ystep) + "</text>\n";
  }
  double xstep = nice_step(x1 - x0, 6);
  for (double x = std::ceil(x0 / xstep) * xstep; x <= x1; x += xstep) {
    std::string label = chart.x_is_unix_time ? time_label(x, x1 - x0) : number_label(x, xstep);
    svg += "<line x1=\"" + num(sx(x)) + "\" x2=\"" + num(sx(x)) + "\" y1=\"" + num(top) + "\" y2=\"" +
           num(top + plot_h) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + num(sx(x)) + "\" y=\"" + num(top + plot_h + 16) + "\" text-anchor=\"middle\">" +
           escape_xml(label) + "</text>\n";
  }
  svg += "<text x=\"" + num(left + plot_w / 2) + "\" y=\"" + num(chart.height - 10.0) + "\" text-anchor=\"middle\">" +
         escape_xml(chart.x_label) + "</text>\n";
  svg += "<text transform=\"translate(16," + num(top + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         escape_xml(chart.y_label) + "</text>\n";

  double legend_y = top + 6;
  for (const auto& b : chart.bands) {
    svg += "<rect x=\"" + num(sx(b.x_low)) + "\" y=\"" + num(sy(b.y_high)) + "\" width=\"" +
           num(std::max(1.0, sx(b.x_high) - sx(b.x_low))) + "\" height=\"" +
           num(std::max(2.0, sy(b.y_low) - sy(b.y_high))) + "\" fill=\"" + b.color + "\" fill-opacity=\"" +
           num(b.opacity) + "\"><title>" + escape_xml(b.label) + "</title></rect>\n";
  }
  for (const auto& s : chart.series) {
    if (s.draw_line && s.points.size() >= 2) {
      std::string path;
      for (const auto& p : s.points) path += (path.empty() ? "M" : " L") + num(sx(p.x)) + "," + num(sy(p.y));
      svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"2\"/>\n";
    }
    if (s.draw_markers)
      for (const auto& p : s.points)
        svg += "<circle cx=\"" + num(sx(p.x)) + "\" cy=\"" + num(sy(p.y)) + "\" r=\"3.5\" fill=\"" + s.color +
               "\"><title>" + escape_xml(p.tooltip) + "</title></circle>\n";
    svg += "<rect x=\"" + num(left + plot_w + 12) + "\" y=\"" + num(legend_y - 8) + "\" width=\"10\" height=\"10\" fill=\"" +
           s.color + "\"/><text x=\"" + num(left + plot_w + 26) + "\" y=\"" + num(legend_y + 1) + "\">" +
           escape_xml(s.label.substr(0, 24)) + "</text>\n";
    legend_y += 16;
  }
  return svg + "</svg>\n";
}

}  // namespace ct::lab
