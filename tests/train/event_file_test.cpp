// TensorBoard event files: the TFRecord framing and Event encoding (decoded here by a reader written
// from the formats' specifications), the metrics writer's event file, and TensorBoard's own reader
// on a real run (tests/python/tensorboard_check.py).
#include "train/event_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "train/metrics_writer.h"
#include "train/train_test_support.h"
#include "util/crc32c.h"
#include "util/files.h"

namespace ct {
namespace {

template <typename T>
T load(std::string_view bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

// Splits a TFRecord stream into its records, checking both CRCs.
std::vector<std::string> read_records(std::string_view bytes) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_GE(bytes.size() - at, 16u);
    const auto length = load<uint64_t>(bytes, at);
    EXPECT_EQ(load<uint32_t>(bytes, at + 8), masked_crc32c(bytes.substr(at, 8)));
    const std::string_view data = bytes.substr(at + 12, length);
    EXPECT_EQ(load<uint32_t>(bytes, at + 12 + length), masked_crc32c(data));
    out.emplace_back(data);
    at += 16 + length;
  }
  EXPECT_EQ(at, bytes.size());
  return out;
}

struct Field {
  uint32_t number, wire_type;
  uint64_t varint = 0;  // wire types 0, 1, 5: the value's bits
  std::string bytes;    // wire type 2
};

uint64_t read_varint(std::string_view b, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<uint8_t>(b.at(at++));
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return v;
  }
}

std::vector<Field> read_fields(std::string_view b) {
  std::vector<Field> out;
  size_t at = 0;
  while (at < b.size()) {
    const uint64_t key = read_varint(b, at);
    Field f{static_cast<uint32_t>(key >> 3), static_cast<uint32_t>(key & 7)};
    if (f.wire_type == 0) f.varint = read_varint(b, at);
    if (f.wire_type == 1) f.varint = load<uint64_t>(b, at), at += 8;
    if (f.wire_type == 5) f.varint = load<uint32_t>(b, at), at += 4;
    if (f.wire_type == 2) {
      const uint64_t n = read_varint(b, at);
      f.bytes = std::string(b.substr(at, n));
      at += n;
    }
    out.push_back(f);
  }
  return out;
}

struct DecodedEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> scalars;
};

DecodedEvent decode_event(std::string_view b) {
  DecodedEvent e;
  for (const Field& f : read_fields(b)) {
    if (f.number == 1 && f.wire_type == 1) std::memcpy(&e.wall_time, &f.varint, 8);
    else if (f.number == 2 && f.wire_type == 0) e.step = static_cast<int64_t>(f.varint);
    else if (f.number == 3 && f.wire_type == 2) e.file_version = f.bytes;
    else if (f.number == 5 && f.wire_type == 2)
      for (const Field& value : read_fields(f.bytes)) {
        EXPECT_EQ(value.number, 1u);
        std::pair<std::string, float> scalar;
        for (const Field& g : read_fields(value.bytes)) {
          if (g.number == 1) scalar.first = g.bytes;
          if (g.number == 2 && g.wire_type == 5) std::memcpy(&scalar.second, &g.varint, 4);
        }
        e.scalars.push_back(scalar);
      }
    else ADD_FAILURE() << "unexpected field " << f.number << " of wire type " << f.wire_type;
  }
  return e;
}

std::vector<DecodedEvent> read_event_folder(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  EXPECT_EQ(files.size(), 1u);
  std::vector<DecodedEvent> out;
  for (const std::string& record : read_records(read_file(files.at(0)))) out.push_back(decode_event(record));
  return out;
}

TEST(EventFile, RecordFramingRoundTrips) {
  // The 8-byte length's masked CRC, as TensorFlow's record writer frames an empty record.
  const std::string empty = tf_record("");
  ASSERT_EQ(empty.size(), 16u);
  EXPECT_EQ(load<uint64_t>(empty, 0), 0u);
  EXPECT_EQ(load<uint32_t>(empty, 12), 0xA282EAD8u);  // masked CRC of no bytes
  const std::string stream = tf_record("abc") + tf_record(std::string(300, 'x')) + empty;
  EXPECT_EQ(read_records(stream), (std::vector<std::string>{"abc", std::string(300, 'x'), ""}));
  // A flipped data byte no longer matches its CRC.
  std::string bad = tf_record("abc");
  bad[13] = 'B';
  EXPECT_NE(load<uint32_t>(bad, 15), masked_crc32c(std::string_view(bad).substr(12, 3)));
}

TEST(EventFile, EventsDecodeToWhatWasWritten) {
  const DecodedEvent version = decode_event(file_version_event(1700000000.25));
  EXPECT_EQ(version.wall_time, 1700000000.25);
  EXPECT_EQ(version.file_version, "brain.Event:2");
  EXPECT_TRUE(version.scalars.empty());
  // A step past 2^31 and past one varint byte; a float that is not a double.
  const DecodedEvent e = decode_event(scalars_event(1700000001.5, 5000000000, {{"train/loss", 3.25f}, {"a/b", 0.1f}}));
  EXPECT_EQ(e.wall_time, 1700000001.5);
  EXPECT_EQ(e.step, 5000000000);
  EXPECT_EQ(e.scalars, (std::vector<std::pair<std::string, float>>{{"train/loss", 3.25f}, {"a/b", 0.1f}}));
  // Step 0 is left out (proto3's default), and reads back as 0.
  EXPECT_EQ(decode_event(scalars_event(1.0, 0, {{"x", 1.0f}})).step, 0);
}

TEST(EventFile, MetricsWriterMirrorsItsRowsAndRebuildsThemOnResume) {
  test::TempDir dir;
  const fs::path metrics = dir / "metrics.jsonl";
  {
    MetricsWriter writer(metrics);
    writer.event(0, 0.0, "start", "");
    for (int64_t step = 1; step <= 3; ++step)
      writer.write(OrderedJson{{"kind", "train"}, {"step", step}, {"loss", 4.0 - step}, {"lr_factor", 1.0},
                               {"grad_norm", nullptr}, {"tokens_per_second", 100.0 * step}, {"mfu", 0.5},
                               {"step_seconds", 0.25}});
    writer.write(OrderedJson{{"kind", "eval"}, {"step", 3}, {"split", "heldout"}, {"loss", 2.5}});
  }
  std::vector<DecodedEvent> events = read_event_folder(dir / kTensorBoardDir);
  ASSERT_EQ(events.size(), 5u);  // the file version, three train rows, one eval row (the start event has no scalars)
  EXPECT_EQ(events[1].step, 1);
  EXPECT_EQ(events[1].scalars, (std::vector<std::pair<std::string, float>>{{"train/loss", 3.0f},
                                                                            {"train/lr_factor", 1.0f},
                                                                            {"train/tokens_per_second", 100.0f},
                                                                            {"train/mfu", 0.5f},
                                                                            {"train/step_seconds", 0.25f}}));
  EXPECT_EQ(events[4].scalars, (std::vector<std::pair<std::string, float>>{{"eval/heldout_loss", 2.5f}}));

  // Resumed from step 1: the rows of steps 2 and 3 go from both outputs; one event file holds the rest.
  {
    MetricsWriter writer(metrics, 1);
    writer.write(OrderedJson{{"kind", "train"}, {"step", 2}, {"loss", 7.0}});
  }
  events = read_event_folder(dir / kTensorBoardDir);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].step, 1);
  EXPECT_EQ(events[2].step, 2);
  EXPECT_EQ(events[2].scalars, (std::vector<std::pair<std::string, float>>{{"train/loss", 7.0f}}));
  // Each event's wall time is its row's "time".
  std::istringstream in(read_file(metrics));
  std::vector<double> times;
  for (std::string line; std::getline(in, line);)
    if (Json::parse(line)["kind"] == "train") times.push_back(Json::parse(line)["time"].get<double>());
  EXPECT_EQ(times, (std::vector<double>{events[1].wall_time, events[2].wall_time}));
}

TEST(TensorBoard, ItsOwnReaderAgreesWithMetrics) {
  const std::string python =
      test::env_or("CLOCKTRAIN_PYARROW_PYTHON", (test::source_dir() / "build/pyarrow-venv/bin/python3").string());
  CT_NEED(test::python_has("tensorboard", python),
          "no tensorboard package in " + python + " (scripts/install-pyarrow.sh installs it)");
  test::TempDir dir;
  const test::TinyTrainFolder tiny(dir.path());
  auto r = test::run_command(tiny.train("--no-progress --steps 12 --out " + (dir / "run").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // A resumed run, whose event file is rebuilt from the rows it keeps.
  r = test::run_command(tiny.train("--no-progress --steps 14 --resume " + (dir / "run" / "checkpoint").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Json> rows = test::read_metrics(dir / "run");
  ASSERT_EQ(test::rows_of_kind(rows, "train").size(), 14u);
  ASSERT_FALSE(test::rows_of_kind(rows, "eval").empty());
  r = test::run_command(python + " " + (test::source_dir() / "tests/python/tensorboard_check.py").string() + " " +
                        (dir / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("agree with metrics.jsonl"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ct
