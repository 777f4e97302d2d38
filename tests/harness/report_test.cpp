#include "harness/report.h"

#include <cmath>

#include "harness/fixtures.h"
#include "harness/xml_check.h"
#include <gmock/gmock.h>

#include "test_support.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using test::count_of;

ReportInputs sample_inputs() {
  ReportInputs in;
  in.title = "run";
  in.result = test::sample_result();
  in.metrics = parse_metrics_jsonl(test::sample_metrics_jsonl(40), "metrics.jsonl");
  in.recipe_text = "name = \"cpu-small\"\n[model]\ndepth = 4\n";
  return in;
}

TEST(Report, WellFormedWithChartsVerdictsScoresAndRecipe) {
  ReportInputs in = sample_inputs();
  in.result->gate.checks[3] = {"full_machine", false, "cpu: 1 thread(s) used of 2 core(s) available"};
  in.result->gate.eligible = false;
  std::string page = render_report_html(in);
  EXPECT_EQ(test::xml_problem(page), "");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(page, Not(HasSubstr("<script")));
  EXPECT_EQ(count_of(page, "http://"), count_of(page, "xmlns=\"http://"));  // nothing to fetch
  // Five charts: loss, throughput, MFU, learning rate, gradient norm.
  EXPECT_EQ(count_of(page, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\""), 5u);
  for (const char* title : {">Loss<", ">Throughput<", ">Model FLOPs utilisation<", ">Learning-rate factor<", ">Gradient norm<"})
    EXPECT_THAT(page, HasSubstr(title));
  EXPECT_THAT(page, HasSubstr(">held-out<"));  // the loss chart's legend
  // The gate, with its evidence and colours.
  EXPECT_THAT(page, HasSubstr("NOT ELIGIBLE"));
  EXPECT_EQ(count_of(page, "<span class=\"pill pass\">PASS</span>"), 4u);
  EXPECT_EQ(count_of(page, "<span class=\"pill fail\">FAIL</span>"), 1u);
  EXPECT_THAT(page, HasSubstr("cpu: 1 thread(s) used of 2 core(s) available"));
  // Scores, recipe, machine.
  EXPECT_THAT(page, HasSubstr("1.7340"));
  EXPECT_THAT(page, HasSubstr(">arc_easy<"));
  EXPECT_THAT(page, HasSubstr(">CORE-21<"));
  EXPECT_THAT(page, HasSubstr(">model.depth<"));
  EXPECT_THAT(page, HasSubstr("[model]\ndepth = 4"));
  EXPECT_THAT(page, HasSubstr(">OMP_NUM_THREADS<"));
  EXPECT_THAT(page, HasSubstr("0.1.0+abc123"));
  EXPECT_THAT(page, HasSubstr(">clock_start<"));
}

// The startup steps (before the training clock starts) would stand at clock 0 in every chart: they are
// left out of the clock charts, and the page says how many. A resumed session's startup steps
// stand at the checkpoint's clock, so "in_clock" decides, not the clock.
TEST(Report, StartupStepsAreLeftOutOfTheClockCharts) {
  MetricsLog log = parse_metrics_jsonl(test::sample_metrics_jsonl(12), "metrics.jsonl");  // 2 startup steps
  log.train[6].in_clock = false;  // as a resumed session's first step
  const std::vector<TrainStepRecord> timed = steps_on_the_clock(log);
  ASSERT_EQ(timed.size(), 9u);
  EXPECT_EQ(timed.front().step, 3);
  for (const auto& s : timed) EXPECT_NE(s.step, 7);
  ReportInputs in = sample_inputs();
  in.metrics = log;
  const std::string page = render_report_html(in);
  EXPECT_THAT(page, HasSubstr("The charts leave out the 3 startup step(s)"));
  // A startup loss far above the others would stretch the loss chart's axis.
  in.metrics.train[0].loss = 7777;
  EXPECT_EQ(render_report_html(in), page);
}

// Words break only where they would not fit (break-all would cut words mid-word everywhere).
TEST(Report, LongWordsWrapWithoutBreakingEveryWord) {
  const std::string page = render_report_html(sample_inputs());
  EXPECT_THAT(page, Not(HasSubstr("break-all")));
  EXPECT_THAT(page, HasSubstr("overflow-wrap: anywhere"));
}

// The machine's matmul ceiling: measured by the CPU backend's probe; the CUDA backend has none and
// reports 0, which the page names instead of printing "0.0 GFLOP/s".
TEST(Report, TheMatmulCeilingIsMeasuredOrSaidToBeNot) {
  ReportInputs in = sample_inputs();
  in.result->device.matmul_precision = "bf16";
  in.result->device.matmul_precision_reason = "bf16: as asked";
  in.result->device.peak_flops = 989.4e12;
  in.result->device.matmul_ceiling_flops = 438.2e9;
  EXPECT_THAT(render_report_html(in), HasSubstr("<dt>matmul ceiling</dt><dd>438.2 GFLOP/s (measured)</dd>"));
  in.result->device.matmul_ceiling_flops = 0;
  EXPECT_THAT(render_report_html(in), HasSubstr("<dt>matmul ceiling</dt><dd>not measured on this backend</dd>"));
}

TEST(Report, EscapesHostileStrings) {
  ReportInputs in = sample_inputs();
  const std::string evil = "<script>alert('x')</script>&\"\x01\xff";
  in.result->name = "name " + evil;
  in.result->recipe.path = evil;
  in.result->recipe.resolved["name"] = evil;
  in.result->gate.checks[0].evidence = evil;
  in.result->environment.push_back({"CLOCKTRAIN_" + evil, evil});
  in.result->core->tasks[0].label = evil;
  in.recipe_text = "name = \"" + evil + "\"\n]]></pre>";
  in.metrics.events.push_back({3, 1.0, evil, evil});
  std::string page = render_report_html(in);
  EXPECT_EQ(test::xml_problem(page), "");
  EXPECT_THAT(page, Not(HasSubstr("<script")));
  EXPECT_THAT(page, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;\xEF\xBF\xBD\xEF\xBF\xBD"));
  EXPECT_THAT(page, Not(HasSubstr("\x01")));
}

TEST(Report, WithoutResultOrSteps) {
  ReportInputs in;
  in.title = "crashed-run";
  in.notes.push_back("result.json is missing");
  std::string page = render_report_html(in);
  EXPECT_EQ(test::xml_problem(page), "");
  EXPECT_THAT(page, HasSubstr("NO RESULT"));
  EXPECT_THAT(page, HasSubstr(">crashed-run<"));
  EXPECT_THAT(page, HasSubstr("result.json is missing"));
  EXPECT_THAT(page, HasSubstr("no data"));
  EXPECT_THAT(page, HasSubstr("metrics.jsonl holds no training step."));
}

TEST(Report, NonFiniteLossesAreMarked) {
  ReportInputs in = sample_inputs();
  in.metrics.train[20].loss = std::nan("");
  in.metrics.train[21].loss = INFINITY;
  for (auto& s : in.metrics.train) s.mfu = std::nan("");  // MFU unknown
  std::string page = render_report_html(in);
  EXPECT_EQ(test::xml_problem(page), "");
  EXPECT_EQ(count_of(page, ">NaN / Inf<"), 1u);  // the loss chart; an unknown MFU is not a NaN
  EXPECT_THAT(page, HasSubstr("MFU not recorded"));
}

TEST(Report, BuildsFromARunFolder) {
  test::TempDir dir;
  write_file_atomic(dir / "metrics.jsonl", test::sample_metrics_jsonl(20));
  EXPECT_EQ(write_run_report(dir.path()), dir / "report.html");
  std::string without_result = read_file(dir / "report.html");
  EXPECT_THAT(without_result, HasSubstr("result.json is missing"));
  write_result_file(dir / "result.json", test::sample_result());
  write_file_atomic(dir / "recipe.toml", "seed = 42\n");
  fs::path out = write_run_report(dir.path(), dir / "elsewhere.html");
  std::string page = read_file(out);
  EXPECT_EQ(test::xml_problem(page), "");
  EXPECT_THAT(page, HasSubstr("ELIGIBLE"));
  EXPECT_THAT(page, HasSubstr("seed = 42"));
}

TEST(Report, RunFolderErrorsLeaveThePreviousPage) {
  test::TempDir dir;
  EXPECT_THROW(write_run_report(dir.path()), Error);  // no metrics.jsonl
  write_file_atomic(dir / "metrics.jsonl", test::sample_metrics_jsonl(5));
  write_run_report(dir.path());
  std::string before = read_file(dir / "report.html");
  write_file_atomic(dir / "result.json", "{\"format\": \"clocktrain-result/1\"");
  try {
    write_run_report(dir.path());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("result.json"));
  }
  EXPECT_EQ(read_file(dir / "report.html"), before);
}

TEST(Report, SameInputsSamePage) {
  EXPECT_EQ(render_report_html(sample_inputs()), render_report_html(sample_inputs()));
}

}  // namespace
}  // namespace ct
