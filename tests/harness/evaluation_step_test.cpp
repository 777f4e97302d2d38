// The trusted evaluation's step (harness/evaluation_step.h) when the evaluator refuses the checkpoint
// (a NaN weight must never give `val_bpb nan` and exit 0): no score is read, a note names the
// command and its status, and the gate's valid_score and trusted_evaluation checks fail saying so.
#include <gmock/gmock.h>

#include <limits>
#include <sstream>

#include "data/data_test_support.h"
#include "eval/tiny_checkpoint.h"
#include "harness/evaluation_step.h"
#include "harness/gate.h"

namespace ct {
namespace {

using ::testing::HasSubstr;

TEST(EvaluationStep, AnEvaluatorRefusingTheCheckpointLeavesNoScoreAndFailsTheGate) {
  test::TempDir dir;
  test::make_tiny_checkpoint(dir / "checkpoint", 0, [](GPT& model) {
    test::set_parameter_element(model, "lm_head.weight", 3, std::numeric_limits<float>::quiet_NaN());
  });
  test::write_jsonl(dir / "data" / "val" / "val_000.jsonl", {{"a", "The quick brown fox jumps over the lazy dog."}});
  EvaluationStep step;
  step.binary = test::clocktrain_bin();
  step.checkpoint_dir = dir / "checkpoint";
  step.data_dir = dir / "data";
  step.out_dir = dir / "eval";
  step.threads = 1;
  step.progress = false;
  std::ostringstream log;
  const EvaluationOutcome out = run_evaluation_step(step, log);
  EXPECT_FALSE(out.val.has_value());
  EXPECT_FALSE(out.evidence.val_bpb.has_value());
  ASSERT_EQ(out.notes.size(), 1u);
  EXPECT_THAT(out.notes[0], HasSubstr("eval bpb " + step.checkpoint_dir.string()));
  EXPECT_THAT(out.notes[0], HasSubstr("exited with status 1 and wrote no result"));
  const GateCheck valid = check_valid_score(TrainEvidence{}, out.evidence);
  EXPECT_FALSE(valid.passed);
  EXPECT_THAT(valid.evidence, HasSubstr("val_bpb was not computed"));
  const GateCheck trusted = check_trusted_evaluation(out.evidence);
  EXPECT_FALSE(trusted.passed);
  EXPECT_THAT(trusted.evidence, HasSubstr("the evaluator produced no val_bpb"));
}

}  // namespace
}  // namespace ct
