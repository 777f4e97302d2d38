#include "lab/child_process.h"
#include "lab/svg_chart.h"
#include "test_support.h"

namespace ct::lab {
namespace {

TEST(ChildProcess, QuotesForTheShellAndKeepsTheOutputTail) {
  EXPECT_EQ(shell_join({"clocktrain", "run", "cpu-small", "--budget", "300"}), "clocktrain run cpu-small --budget 300");
  EXPECT_EQ(shell_join({"sh", "-c", "echo it's $HOME"}), "sh -c 'echo it'\\''s $HOME'");
  ChildResult r = run_child({"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done; exit 3"}, 100);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output_tail.size(), 100u);
  EXPECT_NE(r.output_tail.find("line1999\n"), std::string::npos);
  EXPECT_EQ(run_child({"/nonexistent/clocktrain"}, 100).exit_code, 127);
}

TEST(SvgChart, EscapesTextAndDrawsEveryPoint) {
  Chart chart;
  chart.title = "a <b> & \"c\"";
  chart.series.push_back({"runs", "#000", {{1, 2, "x<y"}, {2, 3, ""}, {3, 2.5, ""}}, true, true});
  chart.bands.push_back({"band", "#f00", 1, 3, 2.2, 2.8, 0.2});
  std::string svg = render_svg(chart);
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("<title>x&lt;y</title>"), std::string::npos);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, 3u);
  EXPECT_NE(svg.find("<path d=\"M"), std::string::npos);
  EXPECT_NE(render_svg(Chart{}).find("no data"), std::string::npos);
}

}  // namespace
}  // namespace ct::lab
