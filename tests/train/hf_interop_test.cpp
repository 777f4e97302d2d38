// A trained checkpoint folder as Hugging Face's own libraries see it (tests/python/hf_check.py, in the
// venv of scripts/install-hf.sh: transformers, safetensors and tokenizers over Debian's torch):
// transformers' loader takes model.safetensors (its metadata says "format": "pt", clocktrain's own
// format under its own key) with every tensor as clocktrain wrote it; AutoConfig recognises config.json
// as a model of type clocktrain-gpt, which it names; and no file is named like Hugging Face's
// tokenizer.json (clocktrain's tokenizer JSON, tokenizer_clocktrain.json, is not that format, and
// Hugging Face's tokenizers refuses it).
#include <gtest/gtest.h>

#include "model/checkpoint.h"
#include "model/tiny_model.h"
#include "train/train_test_support.h"
#include "util/files.h"

namespace ct {
namespace {

TEST(HuggingFace, LoadsTheWeightsAndNamesTheModelType) {
  const std::string python =
      test::env_or("CLOCKTRAIN_HF_PYTHON", (test::source_dir() / "build/hf-venv/bin/python3").string());
  CT_NEED(test::python_has("transformers tokenizers", python),
          "no transformers or tokenizers package in " + python + " (scripts/install-hf.sh installs them)");
  test::TempDir dir;
  auto r = test::run_command(
      test::TinyTrainFolder(dir.path()).train("--no-progress --steps 4 --out " + (dir / "run").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path checkpoint = dir / "run" / "checkpoint";

  r = test::run_command(python + " " + (test::source_dir() / "tests/python/hf_check.py").string() + " " +
                        checkpoint.string() + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Json seen = Json::parse(r.output);
  EXPECT_EQ(seen["format"], "pt");
  EXPECT_EQ(seen["clocktrain_format"], "clocktrain-model/1");

  // Every parameter, with its shape and values, through transformers' loader.
  auto backend = test::cpu_backend();
  const std::unique_ptr<GPT> model = load_model(*backend, checkpoint);
  ASSERT_EQ(seen["tensors"].size(), model->parameters().size());
  for (const Parameter& p : model->parameters()) {
    SCOPED_TRACE(p.spec.name);
    ASSERT_TRUE(seen["tensors"].contains(p.spec.name));
    const Json& t = seen["tensors"][p.spec.name];
    std::vector<int64_t> shape;
    for (int i = 0; i < p.spec.shape.ndim; ++i) shape.push_back(p.spec.shape[i]);
    EXPECT_EQ(t["shape"].get<std::vector<int64_t>>(), shape);
    std::vector<float> values(static_cast<size_t>(p.spec.shape.numel()));
    backend->download(values.data(), DType::f32, p.value);
    double sum_squares = 0;
    for (float v : values) sum_squares += static_cast<double>(v) * v;
    EXPECT_NEAR(t["sum_squares"].get<double>(), sum_squares, 1e-9 * sum_squares);
  }

  const std::string config_error = seen["auto_config_error"];
  EXPECT_NE(config_error.find("model type `clocktrain-gpt`"), std::string::npos) << config_error;
  EXPECT_FALSE(seen["tokenizer_json"].get<bool>());
  EXPECT_FALSE(seen["tokenizers_error"].get<std::string>().empty()) << "tokenizer_clocktrain.json is not Hugging Face's format";
}

}  // namespace
}  // namespace ct
