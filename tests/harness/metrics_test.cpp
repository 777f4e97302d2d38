#include "harness/metrics.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "harness/fixtures.h"
#include "test_support.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {
namespace {

TEST(Metrics, ReadsEveryKind) {
  MetricsLog log = parse_metrics_jsonl(test::sample_metrics_jsonl(12), "metrics.jsonl");
  ASSERT_EQ(log.train.size(), 12u);
  EXPECT_EQ(log.evals.size(), 2u);
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].event, metrics_event::kClockStart);
  EXPECT_EQ(log.events[0].detail, "startup 11.2 s");
  EXPECT_EQ(log.train[11].step, 12);
  EXPECT_EQ(log.train[11].tokens, 12 * 16384);
  EXPECT_DOUBLE_EQ(log.train[11].clock_seconds, 35.0);
  EXPECT_DOUBLE_EQ(log.train[0].mfu, 0.41);
  EXPECT_EQ(log.evals[1].split, "heldout");
  EXPECT_EQ(count_nonfinite_losses(log), 0);
  EXPECT_FALSE(log.truncated_last_line);
  EXPECT_DOUBLE_EQ(*last_train_loss(log), 9.0 - 0.3 * 12);
  EXPECT_DOUBLE_EQ(*last_heldout_loss(log), 9.0 - 0.3 * 10 + 0.05);
  EXPECT_FALSE(last_heldout_loss(MetricsLog{}).has_value());
}

TEST(Metrics, DocumentedExamplesParse) {
  std::string doc = read_file(test::source_dir() / "docs" / "run-records.md");
  std::string text;
  size_t pos = 0;
  int blocks = 0;
  while ((pos = doc.find("```json\n", pos)) != std::string::npos && blocks < 4) {
    size_t end = doc.find("```", pos + 8);
    Json record = Json::parse(doc.substr(pos + 8, end - pos - 8));  // multi-line in the doc
    text += record.dump() + "\n";
    pos = end + 3;
    ++blocks;
  }
  MetricsLog log = parse_metrics_jsonl(text, "run-records.md");
  EXPECT_EQ(log.train.size(), 1u);
  ASSERT_EQ(log.evals.size(), 2u);  // the periodic held-out loss, then clocktrain run's trusted val_bpb
  EXPECT_EQ(log.evals[0].split, "heldout");
  EXPECT_EQ(log.evals[1].split, "val");
  EXPECT_EQ(log.events.size(), 1u);
  EXPECT_EQ(log.skipped_unknown_kind, 0);
  // Every documented record carries its wall-clock time.
  EXPECT_GT(log.train.at(0).time, 1.7e9);
  EXPECT_GT(log.evals.at(0).time, 1.7e9);
  EXPECT_GT(log.events.at(0).time, 1.7e9);
  EXPECT_TRUE(log.train.at(0).in_clock);
}

// "time" (wall-clock unix seconds) is read where present and NaN where a log predates it;
// "in_clock" tells the startup steps, and a log without it counts the steps at clock 0 as startup.
TEST(Metrics, WallClockTimeAndInClockAreRead) {
  std::string text =
      R"({"kind": "train", "step": 1, "tokens": 10, "clock_seconds": 0, "loss": 9.0, "in_clock": false, )"
      R"("time": 1766000000.25})" "\n"
      R"({"kind": "train", "step": 2, "tokens": 20, "clock_seconds": 50, "loss": 8.0, "in_clock": false})" "\n"
      R"({"kind": "train", "step": 3, "tokens": 30, "clock_seconds": 51, "loss": 7.0, "in_clock": true})" "\n"
      R"({"kind": "train", "step": 4, "tokens": 40, "clock_seconds": 0, "loss": 7.0})" "\n"
      R"({"kind": "train", "step": 5, "tokens": 50, "clock_seconds": 52, "loss": 7.0})" "\n"
      R"({"kind": "eval", "step": 5, "clock_seconds": 52, "loss": 7.5, "time": 1766000001.5})" "\n"
      R"({"kind": "event", "step": 5, "clock_seconds": 52, "event": "stop", "time": 1766000002})" "\n";
  MetricsLog log = parse_metrics_jsonl(text, "m.jsonl");
  ASSERT_EQ(log.train.size(), 5u);
  EXPECT_DOUBLE_EQ(log.train[0].time, 1766000000.25);
  EXPECT_TRUE(std::isnan(log.train[1].time));
  EXPECT_DOUBLE_EQ(log.evals.at(0).time, 1766000001.5);
  EXPECT_DOUBLE_EQ(log.events.at(0).time, 1766000002.0);
  EXPECT_FALSE(log.train[0].in_clock);
  EXPECT_FALSE(log.train[1].in_clock);  // a resumed session's startup step, at the checkpoint's clock
  EXPECT_TRUE(log.train[2].in_clock);
  EXPECT_FALSE(log.train[3].in_clock);
  EXPECT_TRUE(log.train[4].in_clock);
  std::string error;
  try {
    parse_metrics_jsonl(R"({"kind": "event", "step": 1, "event": "stop", "time": "noon"})" "\n", "m.jsonl");
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("m.jsonl:1: field 'time'"), std::string::npos) << error;
}

TEST(Metrics, NullsAreNaNAndNonFiniteLossesAreCountedOncePerStep) {
  std::string text =
      R"({"kind": "train", "step": 1, "tokens": 10, "clock_seconds": 0, "loss": 9.0, "mfu": null})" "\n"
      R"({"kind": "train", "step": 2, "tokens": 20, "clock_seconds": 0, "loss": null})" "\n"
      R"({"kind": "event", "step": 2, "clock_seconds": 0, "event": "nonfinite", "detail": "loss"})" "\n"
      R"({"kind": "eval", "step": 3, "clock_seconds": 1.5, "loss": null})" "\n"
      R"({"kind": "event", "step": 4, "event": "nonfinite"})" "\n";
  MetricsLog log = parse_metrics_jsonl(text, "m.jsonl");
  EXPECT_TRUE(std::isnan(log.train[0].mfu));
  EXPECT_TRUE(std::isnan(log.train[0].grad_norm));  // absent optional figure
  EXPECT_TRUE(std::isnan(log.train[1].loss));
  EXPECT_EQ(log.evals[0].split, "heldout");
  EXPECT_EQ(count_nonfinite_losses(log), 3);  // steps 2, 3 and 4
}

TEST(Metrics, UnfinishedLastLineIsNotedNotFatal) {
  std::string text = test::sample_metrics_jsonl(3) + R"({"kind": "train", "step": 4, "tok)";
  MetricsLog log = parse_metrics_jsonl(text, "m.jsonl");
  EXPECT_TRUE(log.truncated_last_line);
  EXPECT_EQ(log.train.size(), 3u);
  // A complete last line without a newline is fine.
  MetricsLog ok = parse_metrics_jsonl(R"({"kind": "event", "step": 1, "event": "stop"})", "m.jsonl");
  EXPECT_FALSE(ok.truncated_last_line);
  EXPECT_EQ(ok.events.size(), 1u);
}

TEST(Metrics, UnknownKindsAreSkippedAndBlankLinesIgnored) {
  MetricsLog log = parse_metrics_jsonl("\n{\"kind\": \"memory\", \"bytes\": 5}\n\n", "m.jsonl");
  EXPECT_EQ(log.skipped_unknown_kind, 1);
}

TEST(Metrics, MalformedLinesNameFileLineAndField) {
  auto error_of = [](const std::string& text) {
    try {
      parse_metrics_jsonl(text, "runs/a/metrics.jsonl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string first = R"({"kind": "event", "step": 1, "event": "clock_start"})" "\n";
  EXPECT_NE(error_of(first + "{not json}\n" + first).find("runs/a/metrics.jsonl:2: invalid JSON"), std::string::npos);
  // Nesting past util/json's guard is refused before nlohmann's recursive parser sees it, also on the
  // last line (which is otherwise forgiven as cut by a crash only when it is unterminated).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(error_of(first + deep + "\n").find("metrics.jsonl:2: invalid JSON at byte 257: arrays/objects nested deeper"),
            std::string::npos);
  EXPECT_NE(error_of(first + R"({"kind": "train", "step": -1, "tokens": 0, "clock_seconds": 0, "loss": 1})" "\n")
                .find("metrics.jsonl:2: field 'step'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "train", "step": 1, "tokens": 0, "clock_seconds": 0})" "\n").find("missing field 'loss'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "eval", "step": 1, "clock_seconds": "soon", "loss": 1})" "\n")
                .find("field 'clock_seconds'"),
            std::string::npos);
  EXPECT_NE(error_of("[1, 2]\n").find("metrics.jsonl:1: expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"step": 1})" "\n").find("missing field 'kind'"), std::string::npos);
}

}  // namespace
}  // namespace ct

namespace ct {
namespace {

// A corrupted log is read or refused with an error that names the file and a line the text has; no
// other exception, and no more records than lines.
TEST(Metrics, RandomlyCorruptedLogsFailCleanly) {
  const std::string good = test::sample_metrics_jsonl(8);
  std::mt19937 rng(99);
  int read = 0, refused = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = good;
    for (int e = 0; e < 3; ++e) {
      size_t at = rng() % text.size();
      text[at] = "{}[]\",:0-e.\n\x01nul"[rng() % 16];
    }
    const auto lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n') + 1);
    try {
      MetricsLog log = parse_metrics_jsonl(text, "fuzz.jsonl");
      EXPECT_LE(log.train.size() + log.evals.size() + log.events.size() + static_cast<size_t>(log.skipped_unknown_kind),
                lines);
      EXPECT_GE(count_nonfinite_losses(log), 0);
      ++read;
    } catch (const Error& e) {
      const std::string message = e.what();
      ASSERT_EQ(message.rfind("fuzz.jsonl:", 0), 0u) << message;
      const size_t line = std::stoul(message.substr(std::string("fuzz.jsonl:").size()));
      EXPECT_GE(line, 1u) << message;
      EXPECT_LE(line, lines) << message;
      ++refused;
    }
  }
  // Both outcomes occur, so both branches above were checked.
  EXPECT_GT(read, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace ct
