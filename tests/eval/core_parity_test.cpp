// Parity with the independent Python reference (tests/python/core_reference.py): the same prompts,
// token sequences, spans, mean losses, verdicts and accuracies, using the toy tokenizer and the hash
// fake model on both sides (their twins are in eval_fakes.h), on the hand-made bundle and on the
// first 50 shuffled rows of every task of the real bundle.
#include "data/text_encoder.h"
#include "eval/core_eval.h"
#include "eval/core_report.h"
#include "eval_fakes.h"
#include "test_support.h"
#include "text/small_tokenizer.h"
#include "util/files.h"

namespace ct {
namespace {

// tokenizer_dir empty: the toy tokenizer on both sides; else a saved tokenizer (C++: ct::Tokenizer,
// Python: its own byte-pair merge of the same files).
void expect_parity(const fs::path& bundle_dir, int64_t max_per_task, int64_t max_len,
                   const fs::path& tokenizer_dir = {}) {
  CT_NEED_PYTHON_MODULES("yaml jinja2 regex", "python3 lacks yaml, jinja2 or regex");
  test::TempDir dir;
  auto bundle = load_core_bundle(bundle_dir);
  test::ToyEncoder toy;
  std::unique_ptr<TextEncoder> real;
  Tokenizer loaded;
  if (!tokenizer_dir.empty()) {
    loaded = Tokenizer::load(tokenizer_dir);
    real = tokenizer_encoder(loaded);
  }
  const TextEncoder& enc = real ? *real : static_cast<const TextEncoder&>(toy);
  test::HashFakeScorer fake(max_len);
  CoreOptions opt;
  opt.max_per_task = max_per_task;
  opt.keep_rows = true;
  auto result = evaluate_core(bundle, enc, fake, opt);
  write_file_atomic(dir / "cpp.json", core_rows_json(result).dump());

  const auto py = test::source_dir() / "tests/python";
  auto ref = test::run_command(test::python() + " " + (py / "core_reference.py").string() + " --bundle " +
                               bundle_dir.string() +
                               (tokenizer_dir.empty() ? std::string(" --toy-tokenizer") : " --tokenizer " + tokenizer_dir.string()) +
                               " --fake-model hash --max-len " +
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

TEST(CoreParity, RealTokenizerMatchesPythonByteLevelMerge) {
  // A small trained BPE tokenizer (tests/text/small_tokenizer.h) saved as tokenizer files: the
  // C++ encoder and the reference's plain-Python merge must give the same ids for every prompt.
  // (not a TempDir: expect_parity's own TempDir takes this test's scratch folder)
  const fs::path tok_dir = fs::temp_directory_path() / ("clocktrain-test-tokenizer-" + std::to_string(::getpid()));
  fs::create_directories(tok_dir);
  test::small_tokenizer().save(tok_dir);
  expect_parity(test::source_dir() / "tests/data/core_small", 0, 40, tok_dir);
  const auto bundle = test::data_dir() / "eval_bundle";
  if (fs::exists(bundle / "core.yaml")) expect_parity(bundle, 20, 1024, tok_dir);
  fs::remove_all(tok_dir);
}

}  // namespace
}  // namespace ct
