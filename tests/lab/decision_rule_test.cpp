#include "lab/decision_rule.h"

#include "test_support.h"
#include "util/error.h"

namespace ct::lab {
namespace {

TEST(DecisionRule, ParsesTheDocumentedForms) {
  DecisionRule r = parse_decision_rule("accept if mean(B) - mean(A) < -0.005 at 95%");
  EXPECT_EQ(r.treatment_arm, "B");
  EXPECT_EQ(r.control_arm, "A");
  EXPECT_EQ(r.metric, "val_bpb");
  EXPECT_EQ(r.comparison, Comparison::less);
  EXPECT_DOUBLE_EQ(r.threshold, -0.005);
  ASSERT_TRUE(r.confidence.has_value());
  EXPECT_DOUBLE_EQ(*r.confidence, 0.95);
  EXPECT_EQ(r.text, "accept if mean(B) - mean(A) < -0.005 at 95%");

  DecisionRule core = parse_decision_rule("Accept IF mean(fast.core)-mean(base) >= 1e-3");
  EXPECT_EQ(core.metric, "core");
  EXPECT_EQ(core.treatment_arm, "fast");
  EXPECT_EQ(core.control_arm, "base");
  EXPECT_EQ(core.comparison, Comparison::greater_equal);
  EXPECT_DOUBLE_EQ(core.threshold, 0.001);
  EXPECT_FALSE(core.confidence.has_value());
  EXPECT_EQ(core.canonical(0.9), "accept if mean(fast.core) - mean(base.core) >= 0.001 at 90%");

  DecisionRule le = parse_decision_rule("accept if mean(B) - mean(A) <= 0.002 at 99.5%");
  EXPECT_EQ(le.comparison, Comparison::less_equal);
  EXPECT_TRUE(le.satisfied_by(0.002));
  EXPECT_FALSE(le.satisfied_by(0.0021));
  EXPECT_DOUBLE_EQ(*le.confidence, 0.995);
}

TEST(DecisionRule, ErrorsSayWhereAndWhat) {
  auto message = [](const char* text) {
    try {
      parse_decision_rule(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("accept if mean(B) + mean(A) < 0").find("column 19: expected '-'"), std::string::npos)
      << message("accept if mean(B) + mean(A) < 0");
  EXPECT_NE(message("accept if mean(B) - mean(A) = 0").find("one of < <= > >="), std::string::npos);
  EXPECT_NE(message("accept if mean(B) - mean(A) < x").find("a number"), std::string::npos);
  EXPECT_NE(message("accept if mean(B) - mean(A) < 0 at 95").find("'%'"), std::string::npos);
  EXPECT_NE(message("accept if mean(B) - mean(A) < 0 at 120%").find("between 0% and 100%"), std::string::npos);
  EXPECT_NE(message("accept if mean(B) - mean(B) < 0").find("with itself"), std::string::npos);
  EXPECT_NE(message("accept if mean(B.core) - mean(A.val_bpb) < 0").find("same metric"), std::string::npos);
  EXPECT_NE(message("accept if mean(B) - mean(A) < 0 please").find("the end of the rule"), std::string::npos);
  EXPECT_NE(message("B is better").find("'accept'"), std::string::npos);
}

}  // namespace
}  // namespace ct::lab
