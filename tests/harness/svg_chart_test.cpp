#include "harness/svg_chart.h"

#include <cmath>

#include "harness/xml_check.h"
#include <gmock/gmock.h>

#include "test_support.h"

namespace ct {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using test::count_of;

LineChart chart_of(std::vector<double> x, std::vector<double> y) {
  LineChart c;
  c.title = "Loss";
  c.x_label = "training clock";
  c.y_label = "loss";
  c.series = {{"train", "#2563eb", std::move(x), std::move(y)}};
  return c;
}

TEST(NiceTicks, StepsOfOneTwoFive) {
  EXPECT_EQ(nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(0, 1800, 5), (std::vector<double>{0, 500, 1000, 1500, 2000}));
  EXPECT_EQ(nice_ticks(3.2, 8.9, 5), (std::vector<double>{2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(3.2, 8.9, 10), (std::vector<double>{3, 4, 5, 6, 7, 8, 9}));
  auto small = nice_ticks(0.0012, 0.0047, 5);
  EXPECT_NEAR(small.front(), 0.001, 1e-15);
  EXPECT_NEAR(small.back(), 0.005, 1e-15);
  auto negative = nice_ticks(-0.3, 0.7, 5);
  EXPECT_NEAR(negative.front(), -0.4, 1e-12);
  EXPECT_EQ(std::count(negative.begin(), negative.end(), 0.0), 1);  // an exact zero tick
}

TEST(ThinSeries, KeepsSpikesAndBreaks) {
  std::vector<double> x, y;
  for (int i = 0; i < 10000; ++i) x.push_back(i), y.push_back(1.0);
  y[5000] = 50;
  y[7000] = std::nan("");
  thin_series(x, y, 500);
  EXPECT_LE(x.size(), 1200u);
  EXPECT_EQ(x.size(), y.size());
  EXPECT_NE(std::find(y.begin(), y.end(), 50.0), y.end());
  EXPECT_EQ(std::count_if(y.begin(), y.end(), [](double v) { return std::isnan(v); }), 1);
  EXPECT_TRUE(std::is_sorted(x.begin(), x.end()));
}

TEST(LineChart, DrawsAxesTicksLabelsAndLine) {
  std::string svg = render_line_chart(chart_of({0, 60, 120, 180}, {9, 6, 5, 4.5}));
  EXPECT_EQ(test::xml_problem(svg), "");
  EXPECT_THAT(svg, HasSubstr(">Loss<"));
  EXPECT_THAT(svg, HasSubstr(">training clock (s)<"));
  EXPECT_THAT(svg, HasSubstr(">loss<"));
  EXPECT_EQ(count_of(svg, "<path d=\"M"), 1u);
  EXPECT_GE(count_of(svg, "class=\"tick\""), 6u);
  EXPECT_THAT(svg, Not(HasSubstr(">train<")));  // one series: no legend
}

TEST(LineChart, LegendAndDurationUnits) {
  LineChart c = chart_of({0, 600, 1200, 1800}, {9, 6, 5, 4.5});
  c.series.push_back({"held-out", "#ea580c", {600, 1800}, {6.1, 4.6}, false, true});
  c.x_markers = {{1800, "budget"}};
  std::string svg = render_line_chart(c);
  EXPECT_EQ(test::xml_problem(svg), "");
  EXPECT_THAT(svg, HasSubstr(">training clock (min)<"));
  EXPECT_THAT(svg, HasSubstr(">30<"));  // 1800 s is 30 min
  EXPECT_THAT(svg, HasSubstr(">train<"));
  EXPECT_THAT(svg, HasSubstr(">held-out<"));
  EXPECT_THAT(svg, HasSubstr(">budget<"));
  EXPECT_EQ(count_of(svg, "r=\"3\""), 2u);  // markers on the held-out points
}

TEST(LineChart, EmptySeriesSaysSo) {
  LineChart c = chart_of({}, {});
  c.empty_text = "MFU not recorded";
  std::string svg = render_line_chart(c);
  EXPECT_EQ(test::xml_problem(svg), "");
  EXPECT_THAT(svg, HasSubstr(">MFU not recorded<"));
  EXPECT_THAT(svg, Not(HasSubstr("<path")));
  LineChart all_nan = chart_of({1, 2}, {std::nan(""), INFINITY});
  EXPECT_THAT(render_line_chart(all_nan), HasSubstr("every value is NaN or Inf"));
}

TEST(LineChart, OnePointAndConstantValues) {
  std::string one = render_line_chart(chart_of({0}, {5}));
  EXPECT_EQ(test::xml_problem(one), "");
  EXPECT_EQ(count_of(one, "<circle"), 1u);
  std::string flat = render_line_chart(chart_of({0, 1, 2}, {1, 1, 1}));
  EXPECT_EQ(test::xml_problem(flat), "");
  EXPECT_THAT(flat, Not(HasSubstr("nan")));
  EXPECT_THAT(flat, Not(HasSubstr("inf")));
}

TEST(LineChart, NonFiniteValuesBreakTheLineAndAreMarked) {
  std::string svg = render_line_chart(chart_of({0, 1, 2, 3, 4, 5}, {5, 4, std::nan(""), 3, INFINITY, 2}));
  EXPECT_EQ(test::xml_problem(svg), "");
  // Pieces: [0,1] as a line, [3] and [5] as dots.
  size_t d = svg.find("<path d=\"") + 9;
  std::string path = svg.substr(d, svg.find('"', d) - d);
  EXPECT_EQ(count_of(path, "M"), 1u) << path;
  EXPECT_EQ(count_of(path, "L"), 1u) << path;
  EXPECT_EQ(count_of(svg, "<circle"), 2u);
  EXPECT_EQ(count_of(svg, "class=\"nonfinite\""), 2u);  // two separate spans
  // A run of NaNs is one span.
  std::string run = render_line_chart(chart_of({0, 1, 2, 3, 4}, {5, std::nan(""), std::nan(""), std::nan(""), 2}));
  EXPECT_EQ(count_of(run, "class=\"nonfinite\""), 1u);
  // Where a gap means "unknown" (MFU), it is only a gap.
  LineChart unknown = chart_of({0, 1, 2}, {0.4, std::nan(""), 0.41});
  unknown.series[0].mark_nonfinite = false;
  EXPECT_THAT(render_line_chart(unknown), Not(HasSubstr("nonfinite")));
  EXPECT_THAT(svg, HasSubstr(">NaN / Inf<"));
  EXPECT_THAT(svg, Not(HasSubstr("nan,")));
}

TEST(LineChart, TickFormats) {
  LineChart rate = chart_of({1, 2}, {350000, 420000});
  rate.y_format = AxisFormat::si;
  rate.y_from_zero = true;
  std::string svg = render_line_chart(rate);
  EXPECT_THAT(svg, HasSubstr(">400k<"));
  EXPECT_THAT(svg, HasSubstr(">0<"));
  LineChart mfu = chart_of({1, 2}, {0.38, 0.42});
  mfu.y_format = AxisFormat::percent;
  EXPECT_THAT(render_line_chart(mfu), HasSubstr(">40%<"));
  LineChart hours = chart_of({0, 14400}, {1, 2});
  EXPECT_THAT(render_line_chart(hours), HasSubstr("(h)<"));
}

TEST(LineChart, EscapesTitleAndSeriesNames) {
  LineChart c = chart_of({0, 1}, {1, 2});
  c.title = "<b>&";
  c.series.push_back({"a<b", "#000", {0, 1}, {2, 3}});
  std::string svg = render_line_chart(c);
  EXPECT_EQ(test::xml_problem(svg), "");
  EXPECT_THAT(svg, HasSubstr("&lt;b&gt;&amp;"));
  EXPECT_THAT(svg, HasSubstr(">a&lt;b<"));
}

// The lab report's scatter charts (moved here with the writer from lab/svg_chart).
TEST(SvgChart, EscapesTextAndDrawsEveryPoint) {
  ScatterChart chart;
  chart.title = "a <b> & \"c\"";
  chart.series.push_back({"runs", "#000", {{1, 2, "x<y"}, {2, 3, ""}, {3, 2.5, ""}}, true, true});
  chart.bands.push_back({"band", "#f00", 1, 3, 2.2, 2.8, 0.2});
  std::string svg = render_scatter_chart(chart);
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("<title>x&lt;y</title>"), std::string::npos);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, 3u);
  EXPECT_NE(svg.find("<path d=\"M"), std::string::npos);
  EXPECT_NE(render_scatter_chart(ScatterChart{}).find("no data"), std::string::npos);
}

// The scatter charts escape through xml_escape, as the report does: malformed UTF-8 and control
// characters in a run's name (the lab's escaper let them through) become U+FFFD, so the page stays XML.
TEST(SvgChart, ScatterChartTextIsCheckedUtf8) {
  ScatterChart chart;
  chart.title = "bad \xff byte";
  chart.x_is_unix_time = true;
  chart.series.push_back({"run \x1b[31m", "#000", {{1.7e9, 2, "tip \xC3"}, {1.7e9 + 3600, 2.5, ""}}, false, true});
  const std::string svg = render_scatter_chart(chart);
  EXPECT_EQ(test::xml_problem(svg), "");
  EXPECT_THAT(svg, HasSubstr("bad \xEF\xBF\xBD byte"));
  EXPECT_THAT(svg, HasSubstr("<title>tip \xEF\xBF\xBD</title>"));
  EXPECT_THAT(svg, Not(HasSubstr("\x1b")));
}

}  // namespace
}  // namespace ct
