#include "harness/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "harness/html.h"
#include "util/clock.h"
#include "util/text_format.h"

namespace ct {

namespace {

constexpr double kMarginLeft = 64, kMarginRight = 18, kMarginTop = 50, kMarginBottom = 46;
constexpr const char* kNonFiniteColor = "#dc2626";

// SVG coordinates: one decimal in the line charts, two in the scatter charts.
std::string num(double v) { return format_fixed(v, 1); }
std::string num2(double v) { return format_fixed(v, 2); }

// Decimals needed to tell ticks `step` apart.
int decimals_for(double step) {
  if (!(step > 0)) return 0;
  int d = static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return std::clamp(d, 0, 8);
}

// A tick label: format_fixed without a minus sign on a value that rounds to zero.
std::string fixed(double v, int decimals) {
  std::string s = format_fixed(v, decimals);
  if (s == "-0" || s.rfind("-0.", 0) == 0) {  // "-0.00" -> "0.00"
    bool all_zero = s.find_first_not_of("-0.") == std::string::npos;
    if (all_zero) s.erase(0, 1);
  }
  return s;
}

// Labels for the ticks of one axis, in the axis's format. `ticks` are in display units.
std::vector<std::string> tick_labels(const std::vector<double>& ticks, AxisFormat format) {
  double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  double max_abs = 0;
  for (double t : ticks) max_abs = std::max(max_abs, std::fabs(t));
  std::vector<std::string> labels;
  if (format == AxisFormat::percent) {
    for (double t : ticks) labels.push_back(fixed(t * 100, decimals_for(step * 100)) + "%");
    return labels;
  }
  if (format == AxisFormat::si || (format == AxisFormat::number && max_abs >= 1e5)) {
    static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
    int index = 0;
    double scale = 1;
    while (max_abs / scale >= 1000 && index < 6) scale *= 1000, ++index;
    for (double t : ticks) labels.push_back(t == 0 ? "0" : fixed(t / scale, decimals_for(step / scale)) + prefixes[index]);
    return labels;
  }
  for (double t : ticks) labels.push_back(fixed(t, decimals_for(step)));
  return labels;
}

struct DurationUnit {
  double seconds;
  const char* name;
};

DurationUnit duration_unit(double max_seconds) {
  if (max_seconds > 3 * 3600) return {3600, "h"};
  if (max_seconds > 180) return {60, "min"};
  return {1, "s"};
}

struct Domain {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
};

Domain make_domain(double lo, double hi, bool from_zero) {
  if (from_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (!(hi > lo)) {
    double pad = std::max(std::fabs(lo) * 0.1, 1e-9);
    if (lo == 0 && hi == 0) pad = 1;
    lo = from_zero && lo >= 0 ? lo : lo - pad;
    hi = hi + pad;
  }
  Domain d;
  d.ticks = nice_ticks(lo, hi, 5);
  d.lo = d.ticks.front();
  d.hi = d.ticks.back();
  return d;
}

std::string text_element(double x, double y, const std::string& anchor, const std::string& cls,
                         const std::string& content, const std::string& extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\" class=\"" + cls + "\"" +
         extra + ">" + xml_escape(content) + "</text>";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  double raw = (hi - lo) / std::max(target, 1);
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double residual = raw / magnitude;
  double step = (residual <= 1 ? 1 : residual <= 2 ? 2 : residual <= 5 ? 5 : 10) * magnitude;
  double first = std::floor(lo / step + 1e-9) * step;
  double last = std::ceil(hi / step - 1e-9) * step;
  std::vector<double> ticks;
  long count = std::lround((last - first) / step);
  for (long i = 0; i <= count; ++i) {
    double t = first + static_cast<double>(i) * step;
    if (std::fabs(t) < step * 1e-9) t = 0;
    ticks.push_back(t);
  }
  if (ticks.size() < 2) ticks = {first, first + step};
  return ticks;
}

void thin_series(std::vector<double>& x, std::vector<double>& y, size_t max_points) {
  size_t n = std::min(x.size(), y.size());
  if (max_points < 4 || n <= max_points) return;
  size_t bucket = (n + max_points / 2 - 1) / (max_points / 2);  // two points per bucket
  std::vector<double> tx, ty;
  for (size_t start = 0; start < n; start += bucket) {
    size_t end = std::min(n, start + bucket);
    size_t lo = n, hi = n, nan_at = n;
    for (size_t i = start; i < end; ++i) {
      if (!std::isfinite(y[i]) || !std::isfinite(x[i])) {
        if (nan_at == n) nan_at = i;
        continue;
      }
      if (lo == n || y[i] < y[lo]) lo = i;
      if (hi == n || y[i] > y[hi]) hi = i;
    }
    std::vector<size_t> keep;
    for (size_t i : {lo, hi, nan_at})
      if (i != n && std::find(keep.begin(), keep.end(), i) == keep.end()) keep.push_back(i);
    std::sort(keep.begin(), keep.end());
    for (size_t i : keep) tx.push_back(x[i]), ty.push_back(y[i]);
  }
  x.swap(tx);
  y.swap(ty);
}

std::string render_line_chart(const LineChart& chart) {
  const double width = chart.width, height = chart.height;
  const double plot_left = kMarginLeft, plot_right = width - kMarginRight;
  const double plot_top = kMarginTop, plot_bottom = height - kMarginBottom;

  // Thin, then find the finite extent of everything drawn.
  std::vector<ChartSeries> series = chart.series;
  for (auto& s : series) {
    s.x.resize(std::min(s.x.size(), s.y.size()));
    s.y.resize(s.x.size());
    thin_series(s.x, s.y, chart.max_points);
  }
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  bool any_point = false, any_nonfinite = false;
  for (const auto& s : series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i])) continue;
      if (!std::isfinite(s.y[i])) {
        any_nonfinite = true;
        continue;
      }
      any_point = true;
      x_lo = std::min(x_lo, s.x[i]), x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]), y_hi = std::max(y_hi, s.y[i]);
    }
  }

  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 " + num(width) + " " +
                    num(height) + "\" role=\"img\" aria-label=\"" + xml_escape(chart.title) + "\">";
  out += text_element(plot_left - 52, 20, "start", "chart-title", chart.title);
  out += "<rect x=\"" + num(plot_left) + "\" y=\"" + num(plot_top) + "\" width=\"" + num(plot_right - plot_left) +
         "\" height=\"" + num(plot_bottom - plot_top) + "\" class=\"plot-bg\"/>";

  if (!any_point) {
    out += text_element((plot_left + plot_right) / 2, (plot_top + plot_bottom) / 2 + 4, "middle", "chart-empty",
                        any_nonfinite ? chart.empty_text + " (every value is NaN or Inf)" : chart.empty_text);
    out += "</svg>";
    return out;
  }

  // Durations are drawn in a unit people read (s, min, h); everything else as is.
  double x_unit = 1;
  std::string x_label = chart.x_label;
  if (chart.x_format == AxisFormat::duration) {
    double max_x = x_hi;
    for (const auto& m : chart.x_markers)
      if (std::isfinite(m.x)) max_x = std::max(max_x, m.x);
    DurationUnit unit = duration_unit(max_x);
    x_unit = unit.seconds;
    x_label += std::string(" (") + unit.name + ")";
  }
  x_lo /= x_unit, x_hi /= x_unit;
  for (const auto& m : chart.x_markers) {
    if (!std::isfinite(m.x)) continue;
    x_lo = std::min(x_lo, m.x / x_unit), x_hi = std::max(x_hi, m.x / x_unit);
  }
  Domain xd = make_domain(x_lo, x_hi, chart.x_from_zero);
  Domain yd = make_domain(y_lo, y_hi, chart.y_from_zero);
  auto px = [&](double x) { return plot_left + (x / x_unit - xd.lo) / (xd.hi - xd.lo) * (plot_right - plot_left); };
  auto py = [&](double y) { return plot_bottom - (y - yd.lo) / (yd.hi - yd.lo) * (plot_bottom - plot_top); };

  // Gridlines and tick labels.
  std::vector<std::string> y_labels = tick_labels(yd.ticks, chart.y_format);
  for (size_t i = 0; i < yd.ticks.size(); ++i) {
    double y = plot_bottom - (yd.ticks[i] - yd.lo) / (yd.hi - yd.lo) * (plot_bottom - plot_top);
    out += "<line x1=\"" + num(plot_left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(plot_right) + "\" y2=\"" + num(y) +
           "\" class=\"grid\"/>";
    out += text_element(plot_left - 6, y + 4, "end", "tick", y_labels[i]);
  }
  AxisFormat x_tick_format = chart.x_format == AxisFormat::duration ? AxisFormat::number : chart.x_format;
  std::vector<std::string> x_labels = tick_labels(xd.ticks, x_tick_format);
  for (size_t i = 0; i < xd.ticks.size(); ++i) {
    double x = plot_left + (xd.ticks[i] - xd.lo) / (xd.hi - xd.lo) * (plot_right - plot_left);
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(plot_bottom) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(plot_bottom + 5) + "\" class=\"axis\"/>";
    out += text_element(x, plot_bottom + 18, "middle", "tick", x_labels[i]);
  }
  out += "<line x1=\"" + num(plot_left) + "\" y1=\"" + num(plot_bottom) + "\" x2=\"" + num(plot_right) + "\" y2=\"" +
         num(plot_bottom) + "\" class=\"axis\"/>";
  out += "<line x1=\"" + num(plot_left) + "\" y1=\"" + num(plot_top) + "\" x2=\"" + num(plot_left) + "\" y2=\"" +
         num(plot_bottom) + "\" class=\"axis\"/>";
  out += text_element((plot_left + plot_right) / 2, height - 8, "middle", "axis-label", x_label);
  double y_mid = (plot_top + plot_bottom) / 2;
  out += text_element(14, y_mid, "middle", "axis-label", chart.y_label,
                      " transform=\"rotate(-90 14 " + num(y_mid) + ")\"");

  for (const auto& m : chart.x_markers) {
    if (!std::isfinite(m.x)) continue;
    double x = px(m.x);
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(plot_top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(plot_bottom) +
           "\" class=\"marker\"/>";
    out += text_element(x - 4, plot_top + 22, "end", "marker-label", m.label);
  }

  // Lines: a non-finite y ends the current piece; a piece of one point is drawn as a dot. Runs of
  // consecutive non-finite values become red spans along the top edge.
  std::vector<std::pair<double, double>> nonfinite_spans;
  for (const auto& s : series) {
    std::string path, piece, dots;
    size_t piece_length = 0;
    double last_x = 0, last_y = 0;
    auto end_piece = [&] {
      if (piece_length >= 2) path += piece;
      if (piece_length == 1 && !s.markers)
        dots += "<circle cx=\"" + num(last_x) + "\" cy=\"" + num(last_y) + "\" r=\"2.5\"/>";
      piece.clear();
      piece_length = 0;
    };
    bool in_span = false;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i])) continue;
      if (!std::isfinite(s.y[i])) {
        end_piece();
        if (!s.mark_nonfinite) continue;
        if (in_span)
          nonfinite_spans.back().second = s.x[i];
        else
          nonfinite_spans.emplace_back(s.x[i], s.x[i]);
        in_span = true;
        continue;
      }
      in_span = false;
      last_x = px(s.x[i]), last_y = py(s.y[i]);
      piece += piece_length == 0 ? 'M' : 'L';
      piece += num(last_x) + "," + num(last_y);
      ++piece_length;
      if (s.markers) dots += "<circle cx=\"" + num(last_x) + "\" cy=\"" + num(last_y) + "\" r=\"3\"/>";
    }
    end_piece();
    if (!path.empty())
      out += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + xml_escape(s.color) + "\" class=\"series" +
             (s.dashed ? " dashed" : "") + "\"/>";
    if (!dots.empty()) out += "<g fill=\"" + xml_escape(s.color) + "\">" + dots + "</g>";
  }
  std::sort(nonfinite_spans.begin(), nonfinite_spans.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& span : nonfinite_spans) {
    if (!merged.empty() && span.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, span.second);
    else
      merged.push_back(span);
  }
  for (const auto& [from, to] : merged) {
    double x0 = px(from), x1 = std::max(px(to), x0 + 2);  // at least 2 units wide, so a single NaN shows
    out += "<rect x=\"" + num(x0 - 1) + "\" y=\"" + num(plot_top) + "\" width=\"" + num(x1 - x0) +
           "\" height=\"8\" fill=\"" + kNonFiniteColor + "\" class=\"nonfinite\"/>";
  }
  // Legend under the title: a swatch and a name per series, then the NaN mark when drawn.
  double lx = plot_left - 52;
  auto legend_item = [&](const std::string& color, const std::string& name, bool dashed) {
    out += "<line x1=\"" + num(lx) + "\" y1=\"36\" x2=\"" + num(lx + 16) + "\" y2=\"36\" stroke=\"" + xml_escape(color) +
           "\" class=\"swatch" + (dashed ? " dashed" : "") + "\"/>";
    out += text_element(lx + 21, 40, "start", "legend", name);
    lx += 21 + 6.6 * static_cast<double>(name.size()) + 16;
  };
  // A lone series is named by the title already; the legend appears when it tells lines apart.
  if (series.size() > 1 || !merged.empty())
    for (const auto& s : series)
      if (!s.name.empty()) legend_item(s.color, s.name, s.dashed);
  if (!merged.empty()) legend_item(kNonFiniteColor, "NaN / Inf", false);
  out += "</svg>";
  return out;
}

std::string palette_color(size_t i) {
  static const std::array<const char*, 8> kColors = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                     "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
  return kColors[i % kColors.size()];
}

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

// The nice_ticks inside [lo, hi] (the scatter charts' axes end at their padded data range), with
// the decimals their labels need.
struct InnerTicks {
  std::vector<double> values;
  int decimals = 0;
};

InnerTicks ticks_within(double lo, double hi) {
  const std::vector<double> all = nice_ticks(lo, hi, 6);
  InnerTicks ticks;
  ticks.decimals = decimals_for(all[1] - all[0]);
  for (double t : all)
    if (t >= lo && t <= hi) ticks.values.push_back(t);
  return ticks;
}

std::string time_label(double unix_seconds, double span) {
  return utc_text(unix_seconds, span > 2 * 86400 ? "%m-%d" : span > 600 ? "%m-%d %H:%M" : "%H:%M:%S");
}

}  // namespace

std::string render_scatter_chart(const ScatterChart& chart) {
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
  svg += "<text x=\"" + num2(left) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" + xml_escape(chart.title) +
         "</text>\n";
  if (!xr.valid() || !yr.valid()) return svg + "<text x=\"" + num2(left) + "\" y=\"60\">no data</text>\n</svg>\n";
  // Pad the ranges so that points do not sit on the frame.
  double xpad = xr.high > xr.low ? 0.05 * (xr.high - xr.low) : std::max(1.0, std::fabs(xr.low) * 0.05);
  double ypad = yr.high > yr.low ? 0.08 * (yr.high - yr.low) : std::max(1e-3, std::fabs(yr.low) * 0.02);
  double x0 = xr.low - xpad, x1 = xr.high + xpad, y0 = yr.low - ypad, y1 = yr.high + ypad;
  auto sx = [&](double x) { return left + (x - x0) / (x1 - x0) * plot_w; };
  auto sy = [&](double y) { return top + (1.0 - (y - y0) / (y1 - y0)) * plot_h; };

  svg += "<rect x=\"" + num2(left) + "\" y=\"" + num2(top) + "\" width=\"" + num2(plot_w) + "\" height=\"" +
         num2(plot_h) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  const InnerTicks y_ticks = ticks_within(y0, y1);
  for (double y : y_ticks.values) {
    svg += "<line x1=\"" + num2(left) + "\" x2=\"" + num2(left + plot_w) + "\" y1=\"" + num2(sy(y)) + "\" y2=\"" +
           num2(sy(y)) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + num2(left - 6) + "\" y=\"" + num2(sy(y) + 4) + "\" text-anchor=\"end\">" +
           fixed(y, y_ticks.decimals) + "</text>\n";
  }
  const InnerTicks x_ticks = ticks_within(x0, x1);
  for (double x : x_ticks.values) {
    std::string label = chart.x_is_unix_time ? time_label(x, x1 - x0) : fixed(x, x_ticks.decimals);
    svg += "<line x1=\"" + num2(sx(x)) + "\" x2=\"" + num2(sx(x)) + "\" y1=\"" + num2(top) + "\" y2=\"" +
           num2(top + plot_h) + "\" stroke=\"#eee\"/>\n";
    svg += "<text x=\"" + num2(sx(x)) + "\" y=\"" + num2(top + plot_h + 16) + "\" text-anchor=\"middle\">" +
           xml_escape(label) + "</text>\n";
  }
  svg += "<text x=\"" + num2(left + plot_w / 2) + "\" y=\"" + num2(chart.height - 10.0) + "\" text-anchor=\"middle\">" +
         xml_escape(chart.x_label) + "</text>\n";
  svg += "<text transform=\"translate(16," + num2(top + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         xml_escape(chart.y_label) + "</text>\n";

  double legend_y = top + 6;
  for (const auto& b : chart.bands) {
    svg += "<rect x=\"" + num2(sx(b.x_low)) + "\" y=\"" + num2(sy(b.y_high)) + "\" width=\"" +
           num2(std::max(1.0, sx(b.x_high) - sx(b.x_low))) + "\" height=\"" +
           num2(std::max(2.0, sy(b.y_low) - sy(b.y_high))) + "\" fill=\"" + xml_escape(b.color) + "\" fill-opacity=\"" +
           num2(b.opacity) + "\"><title>" + xml_escape(b.label) + "</title></rect>\n";
  }
  for (const auto& s : chart.series) {
    if (s.draw_line && s.points.size() >= 2) {
      std::string path;
      for (const auto& p : s.points) path += (path.empty() ? "M" : " L") + num2(sx(p.x)) + "," + num2(sy(p.y));
      svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + xml_escape(s.color) + "\" stroke-width=\"2\"/>\n";
    }
    if (s.draw_markers)
      for (const auto& p : s.points)
        svg += "<circle cx=\"" + num2(sx(p.x)) + "\" cy=\"" + num2(sy(p.y)) + "\" r=\"3.5\" fill=\"" + xml_escape(s.color) +
               "\"><title>" + xml_escape(p.tooltip) + "</title></circle>\n";
    svg += "<rect x=\"" + num2(left + plot_w + 12) + "\" y=\"" + num2(legend_y - 8) +
           "\" width=\"10\" height=\"10\" fill=\"" + xml_escape(s.color) + "\"/><text x=\"" + num2(left + plot_w + 26) +
           "\" y=\"" + num2(legend_y + 1) + "\">" + xml_escape(s.label.substr(0, 24)) + "</text>\n";
    legend_y += 16;
  }
  return svg + "</svg>\n";
}

}  // namespace ct
