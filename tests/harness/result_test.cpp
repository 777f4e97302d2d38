#include "harness/result.h"

#include <cmath>
#include <functional>
#include <random>

#include "harness/fixtures.h"
#include "harness/json_fields.h"
#include "test_support.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {
namespace {

// The JSON code blocks of a markdown file, in order.
std::vector<std::string> json_blocks(const std::string& markdown) {
  std::vector<std::string> blocks;
  size_t pos = 0;
  while ((pos = markdown.find("```json\n", pos)) != std::string::npos) {
    size_t start = pos + 8;
    size_t end = markdown.find("```", start);
    blocks.push_back(markdown.substr(start, end - start));
    pos = end + 3;
  }
  return blocks;
}

// Fails the test where the key structure of `actual` differs from `expected` (free-form maps skipped).
void expect_same_keys(const Json& expected, const Json& actual, const std::string& path) {
  if (path == "recipe.resolved" || path == "environment") return;
  if (expected.is_object()) {
    ASSERT_TRUE(actual.is_object()) << path;
    for (const auto& [k, v] : expected.items()) {
      EXPECT_TRUE(actual.contains(k)) << "documented field " << path << "." << k << " is not written";
      if (actual.contains(k)) expect_same_keys(v, actual.at(k), path.empty() ? k : path + "." + k);
    }
    for (const auto& [k, v] : actual.items())
      EXPECT_TRUE(expected.contains(k)) << "field " << path << "." << k << " is written but not documented";
  } else if (expected.is_array() && !expected.empty() && actual.is_array() && !actual.empty()) {
    expect_same_keys(expected.front(), actual.front(), path + "[0]");
  }
}

TEST(Result, FieldsMatchDocsRunRecords) {
  auto blocks = json_blocks(read_file(test::source_dir() / "docs" / "run-records.md"));
  ASSERT_GE(blocks.size(), 4u);
  Json documented = Json::parse(blocks.back());
  Json written = Json::parse(result_to_json(test::sample_result()).dump());
  expect_same_keys(documented, written, "");
  // And in the documented order.
  std::vector<std::string> doc_order, our_order;
  OrderedJson documented_in_order = OrderedJson::parse(blocks.back());
  OrderedJson written_in_order = result_to_json(test::sample_result());
  for (const auto& [k, v] : documented_in_order.items()) doc_order.push_back(k);
  for (const auto& [k, v] : written_in_order.items()) our_order.push_back(k);
  EXPECT_EQ(doc_order, our_order);
}

TEST(Result, RoundTripsThroughAFile) {
  test::TempDir dir;
  RunResult r = test::sample_result();
  r.extra["future_field"] = {{"x", 1}};
  r.changed_source_lines = 120;
  write_result_file(dir / "result.json", r);
  RunResult back = read_result_file(dir.path());  // a run folder is accepted
  EXPECT_EQ(result_to_json(back).dump(), result_to_json(r).dump());
  EXPECT_EQ(back.extra.at("future_field").at("x"), 1);
  EXPECT_EQ(back.core->tasks[1].prefix_mismatch_rows, 1);
  EXPECT_EQ(*back.changed_source_lines, 120);
}

TEST(Result, NonFiniteScoresAreWrittenAsNull) {
  RunResult r = test::sample_result();
  for (auto& c : r.gate.checks)
    if (c.name == kCheckValidScore) c.passed = false;
  r.gate.eligible = false;
  r.val_bpb = std::nan("");
  r.val->nats = INFINITY;
  r.core.reset();
  OrderedJson j = result_to_json(r);
  EXPECT_TRUE(j.at("val_bpb").is_null());
  EXPECT_TRUE(j.at("val").at("nats").is_null());
  EXPECT_TRUE(j.at("core").is_null());
  RunResult back = result_from_json(Json::parse(j.dump()), "r.json");
  EXPECT_FALSE(back.val_bpb.has_value());
  EXPECT_TRUE(std::isnan(back.val->nats));
  EXPECT_FALSE(back.core.has_value());
}

// Reads `j` after `mutate` and returns the error text ("" if it was accepted).
std::string error_after(const std::function<void(Json&)>& mutate) {
  Json j = Json::parse(result_to_json(test::sample_result()).dump());
  mutate(j);
  try {
    result_from_json(j, "runs/x/result.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Result, RefusesBadFieldsNamingFileAndField) {
  struct Case {
    const char* what;
    std::function<void(Json&)> mutate;
    const char* expected;
  };
  std::vector<Case> cases = {
      {"unknown format", [](Json& j) { j["format"] = "clocktrain-result/2"; }, "field 'format': unknown format"},
      {"missing format", [](Json& j) { j.erase("format"); }, "missing field 'format'"},
      {"missing name", [](Json& j) { j.erase("name"); }, "missing field 'name'"},
      {"empty name", [](Json& j) { j["name"] = ""; }, "field 'name'"},
      {"string bpb", [](Json& j) { j["val_bpb"] = "1.7"; }, "field 'val_bpb': expected a finite number or null"},
      {"negative bpb", [](Json& j) { j["val_bpb"] = -1.0; }, "field 'val_bpb'"},
      {"zero budget", [](Json& j) { j["budget_seconds"] = 0; }, "field 'budget_seconds'"},
      {"negative clock", [](Json& j) { j["train_clock_seconds"] = -3; }, "field 'train_clock_seconds'"},
      {"fractional params", [](Json& j) { j["parameters"] = 1.5; }, "field 'parameters': expected an integer"},
      {"negative steps", [](Json& j) { j["steps"] = -1; }, "field 'steps'"},
      {"round 3", [](Json& j) { j["round"] = 3; }, "field 'round'"},
      {"bad recipe sha", [](Json& j) { j["recipe"]["sha256"] = "abc"; }, "field 'recipe.sha256'"},
      {"resolved not object", [](Json& j) { j["recipe"]["resolved"] = "x"; }, "field 'recipe.resolved'"},
      {"check passed string", [](Json& j) { j["gate"]["checks"][1]["passed"] = "yes"; }, "field 'gate.checks[1].passed'"},
      {"duplicate check", [](Json& j) { j["gate"]["checks"][1]["name"] = "time"; }, "field 'gate.checks[1].name'"},
      {"shard sha", [](Json& j) { j["data"]["shards_read"][1]["sha256"] = "XYZ"; }, "field 'data.shards_read[1].sha256'"},
      {"accuracy > 1", [](Json& j) { j["core"]["tasks"][0]["accuracy"] = 1.5; }, "field 'core.tasks[0].accuracy'"},
      {"missing clamped", [](Json& j) { j["core"]["tasks"][1].erase("clamped_rows"); }, "core.tasks[1].clamped_rows"},
      {"missing task name", [](Json& j) { j["core"]["missing_tasks"][0] = 3; }, "field 'core.missing_tasks[0]'"},
      {"env value number", [](Json& j) { j["environment"]["OMP_NUM_THREADS"] = 2; }, "field 'environment.OMP_NUM_THREADS'"},
      {"devices negative", [](Json& j) { j["device"]["devices"] = -1; }, "field 'device.devices'"},
      {"changed lines absent", [](Json& j) { j.erase("changed_source_lines"); }, "changed_source_lines"},
      {"gate not object", [](Json& j) { j["gate"] = Json::array(); }, "field 'gate': expected an object"},
      {"not an object", [](Json& j) { j = Json::array(); }, "expected a JSON object"},
  };
  for (const auto& c : cases) {
    std::string error = error_after(c.mutate);
    EXPECT_NE(error.find("runs/x/result.json"), std::string::npos) << c.what << ": " << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.what << ": " << error;
  }
  EXPECT_EQ(error_after([](Json&) {}), "");
  EXPECT_EQ(error_after([](Json& j) { j["val"] = nullptr; }), "");
  EXPECT_EQ(error_after([](Json& j) { j["changed_source_lines"] = 7; }), "");
}

TEST(Result, RefusesAGateThatContradictsItself) {
  // Claims eligibility with a failed check.
  EXPECT_NE(error_after([](Json& j) { j["gate"]["checks"][2]["passed"] = false; })
                .find("field 'gate.eligible': true, but check 'trusted_evaluation' did not pass"),
            std::string::npos);
  // Claims eligibility with a required check missing.
  EXPECT_NE(error_after([](Json& j) { j["gate"]["checks"].erase(4); }).find("check 'data' is missing"),
            std::string::npos);
  // Round 2 requires core_time.
  EXPECT_NE(error_after([](Json& j) { j["round"] = 2; }).find("'core_time' is missing"), std::string::npos);
  // Denies eligibility although every check passed.
  EXPECT_NE(error_after([](Json& j) { j["gate"]["eligible"] = false; }).find("every check of round 1 passed"),
            std::string::npos);
  // Eligible figures must agree with the time check.
  EXPECT_NE(error_after([](Json& j) { j["train_clock_seconds"] = 600.5; }).find("field 'train_clock_seconds'"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& j) { j["startup_seconds"] = 901; }).find("field 'startup_seconds'"), std::string::npos);
  EXPECT_NE(error_after([](Json& j) { j["val_bpb"] = nullptr; }).find("field 'val_bpb': null"), std::string::npos);
  // An ineligible result may hold any (valid) figures.
  EXPECT_EQ(error_after([](Json& j) {
              j["gate"]["eligible"] = false;
              j["gate"]["checks"][0]["passed"] = false;
              j["train_clock_seconds"] = 650;
              j["val_bpb"] = nullptr;
            }),
            "");
}

TEST(Result, MalformedFilesNameThePath) {
  test::TempDir dir;
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    write_file_atomic(dir / "result.json", text);
    try {
      read_result_file(dir / "result.json");
      ADD_FAILURE() << "accepted: " << text.substr(0, 60);
    } catch (const Error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find((dir / "result.json").string()), std::string::npos) << what;
      EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  };
  std::string good = result_to_json(test::sample_result()).dump();
  expect_error(good.substr(0, good.size() / 2), "invalid JSON");
  expect_error("", "invalid JSON");
  std::string nan_text = good;
  nan_text.replace(nan_text.find("1.734"), 5, "NaN");
  expect_error(nan_text, "invalid JSON");
  std::string huge = good;
  huge.replace(huge.find("1.734"), 5, "1e999");
  expect_error(huge, "");
  EXPECT_THROW(read_result_file(dir / "missing.json"), Error);
  fs::create_directories(dir / "empty-run");
  try {
    read_result_file(dir / "empty-run");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without result.json"), std::string::npos) << e.what();
  }
}

TEST(Result, WriteRefusesWhatReadWouldRefuseAndKeepsThePreviousFile) {
  test::TempDir dir;
  write_result_file(dir / "result.json", test::sample_result());
  std::string before = read_file(dir / "result.json");
  RunResult bad = test::sample_result();
  bad.gate.checks[0].passed = false;  // still marked eligible
  EXPECT_THROW(write_result_file(dir / "result.json", bad), Error);
  RunResult nan_clock = test::sample_result();
  nan_clock.train_clock_seconds = std::nan("");
  EXPECT_THROW(write_result_file(dir / "result.json", nan_clock), Error);
  EXPECT_EQ(read_file(dir / "result.json"), before);
}

TEST(Result, RequiredChecksByRound) {
  EXPECT_EQ(required_checks(1), (std::vector<std::string>{"time", "valid_score", "trusted_evaluation", "full_machine", "data"}));
  EXPECT_EQ(required_checks(2).back(), "core_time");
  EXPECT_EQ(required_checks(2).size(), 6u);
}

}  // namespace
}  // namespace ct

namespace ct {
namespace {

// Hostile input: random byte edits of a valid file either read or fail with ct::Error (never a
// crash or another exception type), and whatever reads is written back to something that reads.
TEST(Result, RandomlyCorruptedFilesFailCleanly) {
  const std::string good = result_to_json(test::sample_result()).dump(2);
  std::mt19937 rng(1234);
  int accepted = 0, refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = good;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = static_cast<char>(rng() % 256); break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, 1, "{}[]\",:0-e.\\n"[rng() % 13]); break;
      }
      if (text.empty()) text = "x";
    }
    try {
      Json j = json_from_text(text, "fuzz.json");
      RunResult r = result_from_json(j, "fuzz.json");
      ++accepted;
      EXPECT_NO_THROW(result_from_json(Json::parse(result_to_json(r).dump()), "again"));
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);  // edits inside strings keep the file valid
}

}  // namespace
}  // namespace ct
