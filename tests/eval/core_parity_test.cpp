// Parity with the independent Python reference (tests/python/core_reference.py): the same prompts,
// token sequences, spans, mean losses, verdicts and accuracies, using the toy tokenizer and the hash
// fake model on both sides (their twins are in eval_fakes.h), on the hand-made bundle and on the
// first 50 shuffled rows of every task of the real bundle.
#include "eval/core_eval.h"
#include "eval/core_report.h"
#include "eval_fakes.h"
#include "test_support.h"
#include "util/files.h"

namespace ct {
namespace {

void expect_parity(const fs::path& bundle_dir, int64_t max_per_task, int64_t max_len) {
  if (!test::python_has("yaml jinja2")) GTEST_SKIP() << "python3 lacks yaml or jinja2";
  test::TempDir dir;
  auto bundle = load_core_bundle(bundle_dir);
  test::ToyEncoder enc;
  test::HashFakeScorer fake(max_len);
  CoreOptions opt;
  opt.max_per_task = max_per_task;
  opt.keep_rows = true;
  auto result = evaluate_core(bundle, enc, fake, opt);
  write_file_atomic(dir / "cpp.json", core_rows_json(result).dump());

  const auto py = test::source_dir() / "tests/python";
  auto ref = test::run_command(test::python() + " " + (py / "core_reference.py").string() + " --bundle " +
                               bundle_dir.string() + " --toy-tokenizer --fake-model hash --max-len " +
                               std::to_string(max_len) + " --max-per-task " + std::to_string(max_per_task) +
                               " --out " + (dir / "py.json").string());
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  auto cmp = test::run_command(test::python() + " " + (py / "compare_core_dumps.py").string() + " " +
                               (dir / "cpp.json").string() + " " + (dir / "py.json").string());
  EXPECT_EQ(cmp.exit_code, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("dumps agree"), std::string::npos) << cmp.output;
}

TEST(CoreParity, SmallBundleMatchesPythonReference) {
  expect_parity(test::source_dir() / "tests/data/core_small", 0, 40);
}

TEST(CoreParity, RealBundleFirst50RowsMatchPythonReference) {
  const auto dir = test::data_dir() / "eval_bundle";
  if (!fs::exists(dir / "core.yaml")) GTEST_SKIP() << "no eval bundle at " << dir;
  // A 512-token context, so the long few-shot prompts (squad, boolq, ...) are truncated and some
  // spans clamped on both sides.
  expect_parity(dir, 50, 512);
}

}  // namespace
}  // namespace ct
