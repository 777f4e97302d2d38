// Loading the CORE bundle: the hand-made one in tests/data/core_small, bad inputs, and the real one.
#include "eval/core_bundle.h"

#include "eval_fakes.h"
#include "test_support.h"
#include "util/error.h"
#include "util/files.h"

namespace ct {
namespace {


using test::error_of;

TEST(CoreBundle, SmallBundleParses) {
  auto b = load_core_bundle(test::small_core_bundle());
  ASSERT_EQ(b.tasks.size(), 9u);
  const auto& mc = b.task("mc_default");
  EXPECT_EQ(mc.type, CoreTaskType::kMultipleChoice);
  EXPECT_EQ(mc.num_fewshot, 0);
  EXPECT_EQ(mc.continuation_delimiter, " ");
  EXPECT_EQ(mc.random_baseline_percent, 50);
  EXPECT_EQ(b.task("mc_answer").continuation_delimiter, "\nAnswer: ");
  EXPECT_EQ(b.task("mc_answer").num_fewshot, 2);
  EXPECT_EQ(b.task("lm_merge").continuation_delimiter, "");
  EXPECT_EQ(b.task("schema_shots").type, CoreTaskType::kSchema);
  EXPECT_EQ(b.task("lm_default").type, CoreTaskType::kLanguageModeling);
  EXPECT_EQ(b.missing_labels(), std::vector<std::string>{"absent_task"});
  EXPECT_NE(error_of([&] { b.task("nope"); }).find("no task labelled 'nope'"), std::string::npos);
}

TEST(CoreBundle, RowsOfEachType) {
  auto b = load_core_bundle(test::small_core_bundle());
  auto mc = load_core_rows(b.task("mc_answer").data_path, CoreTaskType::kMultipleChoice);
  ASSERT_EQ(mc.size(), 5u);
  EXPECT_EQ(mc[2].choices, (std::vector<std::string>{"alpha", "wrong", "right"}));
  EXPECT_EQ(mc[2].gold, 2);
  EXPECT_EQ(mc[2].line, 3);
  auto schema = load_core_rows(b.task("schema_shots").data_path, CoreTaskType::kSchema);
  EXPECT_EQ(schema[3].context_options.size(), 3u);
  EXPECT_EQ(schema[3].continuation, "it rained.");
  auto lm = load_core_rows(b.task("lm_default").data_path, CoreTaskType::kLanguageModeling);
  EXPECT_EQ(lm[3].context, " \xC2\xA0 Leading space context");
}

class BadBundle : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path() / "eval_data");
    write_file_atomic(dir_ / "eval_meta_data.csv", "Eval Task,Random baseline\nt,25\n");
    write_file_atomic(dir_ / "eval_data/t.jsonl", "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n");
  }
  void yaml(const std::string& text) { write_file_atomic(dir_ / "core.yaml", text); }
  std::string load_error() { return error_of([&] { load_core_bundle(dir_.path()); }); }
  test::TempDir dir_;
};

TEST_F(BadBundle, ErrorsNameFileLineAndField) {
  const std::string y = (dir_ / "core.yaml").string();
  yaml("icl_tasks:\n- label: t\n  dataset_uri: t.jsonl\n  num_fewshot: [0]\n  icl_task_type: multiple_choice\n");
  EXPECT_EQ(load_error(), "");
  yaml("icl_tasks:\n- label: t\n  dataset_uri: t.jsonl\n  num_fewshot: [0]\n  icl_task_type: cloze\n");
  EXPECT_EQ(load_error(), y + ":5: task 't': field 'icl_task_type': expected multiple_choice, schema or "
                              "language_modeling, got 'cloze'");
  yaml("icl_tasks:\n- label: t\n  dataset_uri: t.jsonl\n  icl_task_type: schema\n");
  EXPECT_EQ(load_error(), y + ":2: task 't': missing field 'num_fewshot'");
  yaml("icl_tasks:\n- label: t\n  dataset_uri: t.jsonl\n  num_fewshot: [1, 5]\n  icl_task_type: schema\n");
  EXPECT_NE(load_error().find(":4: task 't': field 'num_fewshot': expected one shot count"), std::string::npos);
  yaml("icl_tasks:\n- label: u\n  dataset_uri: t.jsonl\n  num_fewshot: 0\n  icl_task_type: schema\n");
  EXPECT_EQ(load_error(), (dir_ / "eval_meta_data.csv").string() +
                              ": no row with 'Eval Task' = 'u' (needed for its random baseline; the task is listed at " +
                              y + ":2)");
  yaml("tasks: []\n");
  EXPECT_EQ(load_error(), y + ": expected a list 'icl_tasks'");
  yaml("icl_tasks: [\n");
  EXPECT_NE(load_error().find(y + ":"), std::string::npos);
  write_file_atomic(dir_ / "eval_meta_data.csv", "Eval Task,Random baseline\nt,n/a\n");
  yaml("icl_tasks:\n- label: t\n  dataset_uri: t.jsonl\n  num_fewshot: [0]\n  icl_task_type: multiple_choice\n");
  EXPECT_EQ(load_error(), (dir_ / "eval_meta_data.csv").string() +
                              ": line 2: column 'Random baseline': expected a number (percent), got 'n/a'");
}

TEST_F(BadBundle, RowErrorsNameFileLineAndField) {
  const auto path = dir_ / "eval_data/t.jsonl";
  auto rows_error = [&](const std::string& text, CoreTaskType type) {
    write_file_atomic(path, text);
    return error_of([&] { load_core_rows(path, type); });
  };
  const std::string ok = "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n";
  EXPECT_EQ(rows_error(ok + "{\"query\": \"q\", \"choices\": [\"a\"], \"gold\": 1}\n", CoreTaskType::kMultipleChoice),
            path.string() + ":2: field 'gold': expected an index in [0, 1), got 1");
  EXPECT_EQ(rows_error(ok + ok + "{\"query\": 3}\n", CoreTaskType::kMultipleChoice),
            path.string() + ":3: field 'query': expected a string");
  EXPECT_EQ(rows_error(ok + "\n" + ok, CoreTaskType::kMultipleChoice).substr(0, path.string().size() + 3),
            path.string() + ":2:");
  EXPECT_EQ(rows_error("{\"context\": \"c\"}\n", CoreTaskType::kLanguageModeling),
            path.string() + ":1: missing field 'continuation'");
  EXPECT_EQ(rows_error("{\"context_options\": [], \"continuation\": \"c\", \"gold\": 0}\n", CoreTaskType::kSchema),
            path.string() + ":1: field 'context_options': expected a non-empty list of strings");
}

// Found by fuzz_core_bundle: a core.yaml that is a bare scalar made yaml-cpp throw BadSubscript
// (not a ct::Error) at root["icl_tasks"].
TEST_F(BadBundle, HostileYamlAndBaselines) {
  const std::string y = (dir_ / "core.yaml").string();
  yaml("just a scalar\n");
  EXPECT_EQ(load_error(), y + ": expected a mapping with a list 'icl_tasks'");
  yaml("- a\n- list\n");
  EXPECT_EQ(load_error(), y + ": expected a mapping with a list 'icl_tasks'");
  // A data file outside the bundle is refused.
  yaml("icl_tasks:\n- label: t\n  dataset_uri: ../../etc/passwd\n  num_fewshot: [0]\n  icl_task_type: schema\n");
  EXPECT_EQ(load_error(), y + ":3: task 't': field 'dataset_uri': expected a relative path inside eval_data/ (no "
                              "'..'), got '../../etc/passwd'");
  yaml("icl_tasks:\n- label: t\n  dataset_uri: /etc/passwd\n  num_fewshot: [0]\n  icl_task_type: schema\n");
  EXPECT_NE(load_error().find("field 'dataset_uri'"), std::string::npos);
  // A baseline that is not a finite number.
  yaml("icl_tasks:\n- label: t\n  dataset_uri: t.jsonl\n  num_fewshot: [0]\n  icl_task_type: multiple_choice\n");
  write_file_atomic(dir_ / "eval_meta_data.csv", "Eval Task,Random baseline\nt,-inf\n");
  EXPECT_EQ(load_error(), (dir_ / "eval_meta_data.csv").string() +
                              ": line 2: column 'Random baseline': expected a number (percent), got '-inf'");
}

// A number beyond double made nlohmann::json throw out_of_range, not parse_error: it escaped.
TEST_F(BadBundle, RowNumberBeyondDoubleIsNamed) {
  const auto path = dir_ / "eval_data/t.jsonl";
  write_file_atomic(path, "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 1e999}\n");
  EXPECT_NE(error_of([&] { load_core_rows(path, CoreTaskType::kMultipleChoice); }).find(path.string() + ":1: invalid JSON"),
            std::string::npos);
}

TEST(CoreBundle, RealBundleHas22TasksWithCoqaMissing) {
  const auto dir = test::data_dir() / "eval_bundle";
  if (!fs::exists(dir / "core.yaml")) GTEST_SKIP() << "no eval bundle at " << dir;
  auto b = load_core_bundle(dir);
  ASSERT_EQ(b.tasks.size(), 22u);
  EXPECT_EQ(b.missing_labels(), std::vector<std::string>{"coqa"});
  EXPECT_EQ(b.task("arc_easy").continuation_delimiter, "\nAnswer: ");
  EXPECT_EQ(b.task("arc_easy").num_fewshot, 10);
  EXPECT_EQ(b.task("hellaswag").continuation_delimiter, " ");
  EXPECT_EQ(b.task("boolq").random_baseline_percent, 62);
  EXPECT_EQ(b.task("bigbench_language_identification").random_baseline_percent, 9.1);
  EXPECT_EQ(b.task("winograd").type, CoreTaskType::kSchema);
  EXPECT_EQ(b.task("agi_eval_lsat_ar").num_fewshot, 3);
  int rows = 0;
  for (const auto& t : b.tasks) {
    if (!t.data_present) continue;
    rows += static_cast<int>(load_core_rows(t.data_path, t.type).size());
  }
  EXPECT_EQ(rows, 83054);  // lines of the 20 files (21 tasks: hellaswag counted twice)
}

}  // namespace
}  // namespace ct
