// The CORE procedure on the hand-made bundle (tests/data/core_small) with fake models whose
// verdicts are worked out by hand (RuleFakeScorer), and invariance under batching (HashFakeScorer).
#include "eval/core_eval.h"

#include <cmath>

#include "eval/core_prompts.h"
#include "eval/core_report.h"
#include "eval_fakes.h"
#include "test_support.h"
#include "util/error.h"
#include "util/read_guard.h"

namespace ct {
namespace {


const CoreTaskResult& task(const CoreResult& r, const std::string& label) {
  for (const auto& t : r.tasks)
    if (t.label == label) return t;
  throw Error("no task " + label);
}

test::RuleFakeScorer rule_fake(const TextEncoder& enc, int64_t max_len) {
  auto id = [&](const char* piece) { return test::ToyEncoder::id_of(piece); };
  (void)enc;
  std::map<int32_t, float> cost = {{id(" right"), 0.25f}, {id("right"), 0.25f}, {id(" wrong"), 2.0f}, {id("wrong"), 2.0f}};
  std::set<int32_t> good = {id(" good"), id("good")};
  std::set<int32_t> known = {id(" Paris"), id("Paris"), id(" blue")};
  return test::RuleFakeScorer(max_len, cost, good, known);
}

TEST(CoreEval, KnownAnswersOnTheSmallBundle) {
  auto bundle = load_core_bundle(test::small_core_bundle());
  test::ToyEncoder enc;
  auto scorer = rule_fake(enc, 48);
  CoreOptions opt;
  opt.keep_rows = true;
  CoreResult r = evaluate_core(bundle, enc, scorer, opt);
  ASSERT_EQ(r.tasks.size(), 8u);
  EXPECT_EQ(r.metric_name, "CORE-8");
  EXPECT_EQ(r.missing_tasks, std::vector<std::string>{"absent_task"});

  struct Expect {
    const char* label;
    int rows, correct;
    double baseline;
    int truncated, clamped, mismatched;
  };
  // Worked out by hand from the rule fake (see eval_fakes.h) and the rows in tests/data/core_small:
  const Expect expected[] = {
      // right/wrong pick the cheap choice; ties (alpha/beta) pick the first; "right wrong" vs "right"
      // leaves the second an empty span (NaN mean), so the first is chosen.
      {"mc_default", 6, 3, 50, 0, 0, 0},
      {"mc_answer", 5, 4, 25, 0, 0, 0},
      // 65 and 62 tokens in a 48-token context: both cut; the second's span starts before 1.
      {"mc_long", 3, 3, 50, 2, 1, 0},
      // the option with "good" halves the loss of the shared suffix; "one"/"two" tie.
      {"schema_zero", 4, 2, 50, 0, 0, 0},
      {"schema_shots", 4, 2, 50, 0, 0, 0},
      // trim() of the context (trailing "  \n", leading NBSP) keeps " blue" and " Paris" whole.
      {"lm_default", 4, 3, 0, 0, 0, 0},
      {"lm_answer", 3, 2, 0, 0, 0, 0},
      // "abc" + "def" tokenizes as one piece: not a prefix, counted wrong. "no more" + "" adds no
      // token: an empty span, counted correct (docs/eval.md's rule over no positions).
      {"lm_merge", 3, 2, 0, 0, 0, 1},
  };
  double centered_sum = 0;
  for (const auto& e : expected) {
    SCOPED_TRACE(e.label);
    const auto& t = task(r, e.label);
    EXPECT_EQ(t.rows, e.rows);
    EXPECT_EQ(t.correct, e.correct);
    EXPECT_DOUBLE_EQ(t.accuracy, double(e.correct) / e.rows);
    const double rb = 0.01 * e.baseline;  // the formula of docs/eval.md, as written
    // (to rounding: the library may fuse the subtraction into an FMA where this file does not)
    EXPECT_NEAR(t.centered, (double(e.correct) / e.rows - rb) / (1 - rb), 1e-15);
    EXPECT_EQ(t.truncated_rows, e.truncated);
    EXPECT_EQ(t.clamped_rows, e.clamped);
    EXPECT_EQ(t.prefix_mismatch_rows, e.mismatched);
    centered_sum += t.centered;
  }
  EXPECT_DOUBLE_EQ(r.core, centered_sum / 8);

  // The empty-span row: choice 1's mean loss is NaN and choice 0 (2.0) is chosen.
  for (const auto& row : task(r, "mc_default").row_records) {
    if (row.prompts[0].find("extends") == std::string::npos) continue;
    ASSERT_EQ(row.mean_losses.size(), 2u);
    EXPECT_EQ(row.mean_losses[0], 2.0);
    EXPECT_TRUE(std::isnan(row.mean_losses[1]));
    EXPECT_EQ(row.pred, 0);
    EXPECT_FALSE(row.correct);
  }
  // The clamped row keeps the last 48 tokens and scores positions 1..47.
  for (const auto& row : task(r, "mc_long").row_records) {
    if (!row.question.clamped) continue;
    EXPECT_EQ(row.question.sequences[0].tokens.size(), 48u);
    EXPECT_EQ(row.question.sequences[0].span_begin, 1);
    EXPECT_EQ(row.question.sequences[0].span_end, 48);
    EXPECT_EQ(row.question.sequences[1].tokens.size(), 3u);  // "Q wrong" is short: untouched
    EXPECT_EQ(row.question.sequences[1].span_begin, 2);
  }
  // The table names the metric and the missing task.
  const std::string table = core_result_table(r);
  EXPECT_NE(table.find("CORE-8:"), std::string::npos) << table;
  EXPECT_NE(table.find("missing (data file absent): absent_task"), std::string::npos) << table;
  auto j = core_result_json(r);
  EXPECT_EQ(j["missing_tasks"][0], "absent_task");
  EXPECT_EQ(j["tasks"].size(), 8u);
  EXPECT_EQ(j["tasks"][0]["label"], "mc_default");
  EXPECT_EQ(j["tasks"][0]["shots"], 0);
  EXPECT_EQ(j["tasks"][0]["type"], "multiple_choice");
}

TEST(CoreEval, PromptsFollowTheRenderingRules) {
  CoreRow shot1, shot2, item;
  shot1.query = "Q1";
  shot1.choices = {"a1", "b1"};
  shot1.gold = 1;
  shot2.query = "Q2";
  shot2.choices = {"a2"};
  shot2.gold = 0;
  item.query = "Q";
  item.choices = {"x", "y"};
  auto mc = render_core_prompts(CoreTaskType::kMultipleChoice, "\nAnswer: ", item, {&shot1, &shot2});
  EXPECT_EQ(mc, (std::vector<std::string>{"Q1\nAnswer: b1\n\nQ2\nAnswer: a2\n\nQ\nAnswer: x",
                                          "Q1\nAnswer: b1\n\nQ2\nAnswer: a2\n\nQ\nAnswer: y"}));
  CoreRow s_shot, s_item;
  s_shot.context_options = {"c0", "c1"};
  s_shot.continuation = "end.";
  s_shot.gold = 0;
  s_item.context_options = {" o1 ", "o2"};
  s_item.continuation = " tail ";
  auto schema = render_core_prompts(CoreTaskType::kSchema, " ", s_item, {&s_shot});
  EXPECT_EQ(schema, (std::vector<std::string>{"c0 end.\n\n o1   tail ", "c0 end.\n\no2  tail "}));
  CoreRow l_shot, l_item;
  l_shot.context = "  ctx one \n";
  l_shot.continuation = " cont ";
  l_item.context = "\tctx two  ";
  l_item.continuation = "answer ";
  auto lm = render_core_prompts(CoreTaskType::kLanguageModeling, "\nAnswer: ", l_item, {&l_shot});
  ASSERT_EQ(lm.size(), 2u);
  EXPECT_EQ(lm[0], "ctx one\nAnswer:  cont \n\nctx two\nAnswer:");   // stripped as a whole
  EXPECT_EQ(lm[1], "ctx one\nAnswer:  cont \n\nctx two\nAnswer: answer ");
  // Zero shots: the "without" prompt of an empty context is stripped to nothing.
  CoreRow empty;
  empty.context = "  ";
  empty.continuation = "x";
  EXPECT_EQ(render_core_prompts(CoreTaskType::kLanguageModeling, " ", empty, {}),
            (std::vector<std::string>{"", " x"}));
}

TEST(CoreEval, SpansOfEachType) {
  test::ToyEncoder enc;
  const int32_t bos = 0;
  auto id = [](const char* p) { return test::ToyEncoder::id_of(p); };
  auto mc = build_core_question(CoreTaskType::kMultipleChoice, {"Q is a", "Q is b c"}, 1, enc, 0);
  ASSERT_EQ(mc.sequences.size(), 2u);
  EXPECT_EQ(mc.sequences[0].tokens, (std::vector<int32_t>{bos, id("Q"), id(" is"), id(" a")}));
  EXPECT_EQ(mc.sequences[0].span_begin, 3);
  EXPECT_EQ(mc.sequences[0].span_end, 4);
  EXPECT_EQ(mc.sequences[1].span_begin, 3);
  EXPECT_EQ(mc.sequences[1].span_end, 5);
  auto schema = build_core_question(CoreTaskType::kSchema, {"He x ran off", "She ran off"}, 0, enc, 0);
  EXPECT_EQ(schema.sequences[0].span_begin, 3);  // BOS He x | ran off
  EXPECT_EQ(schema.sequences[0].span_end, 5);
  EXPECT_EQ(schema.sequences[1].span_begin, 2);  // BOS She | ran off
  auto lm = build_core_question(CoreTaskType::kLanguageModeling, {"a b", "a b c d"}, -1, enc, 0);
  EXPECT_FALSE(lm.prefix_mismatch);
  ASSERT_EQ(lm.sequences.size(), 1u);
  EXPECT_EQ(lm.sequences[0].span_begin, 3);
  EXPECT_EQ(lm.sequences[0].span_end, 5);
  EXPECT_TRUE(build_core_question(CoreTaskType::kLanguageModeling, {"a b", "a bc"}, -1, enc, 0).prefix_mismatch);
  // A continuation that adds no tokens: an empty span (docs/eval.md: correct when the argmax matches at
  // every span position, of which there are none), not a mismatch.
  auto empty = build_core_question(CoreTaskType::kLanguageModeling, {"a b", "a b"}, -1, enc, 0);
  EXPECT_FALSE(empty.prefix_mismatch);
  ASSERT_EQ(empty.sequences.size(), 1u);
  EXPECT_EQ(empty.sequences[0].span_begin, 3);
  EXPECT_EQ(empty.sequences[0].span_end, 3);
  SequenceScores any;
  any.loss.assign(2, 1.0f);
  any.argmax.assign(2, id(" c"));  // predicts nothing that is there
  EXPECT_TRUE(span_greedy_match(any, empty.sequences[0]));
  // Truncation: keep the last 4 tokens, shift the span; clamp a span that starts before 1.
  auto cut = build_core_question(CoreTaskType::kLanguageModeling, {"a b c d", "a b c d e"}, -1, enc, 4);
  EXPECT_TRUE(cut.truncated);
  EXPECT_FALSE(cut.clamped);
  EXPECT_EQ(cut.sequences[0].tokens, (std::vector<int32_t>{id(" b"), id(" c"), id(" d"), id(" e")}));
  EXPECT_EQ(cut.sequences[0].span_begin, 3);
  EXPECT_EQ(cut.sequences[0].span_end, 4);
  auto clamp = build_core_question(CoreTaskType::kLanguageModeling, {"a", "a b c d e f"}, -1, enc, 3);
  EXPECT_TRUE(clamp.clamped);
  EXPECT_EQ(clamp.sequences[0].span_begin, 1);
  EXPECT_EQ(clamp.sequences[0].span_end, 3);
}

TEST(CoreEval, LowestMeanLossFirstWinsAndNaN) {
  const double nan = std::nan("");
  EXPECT_EQ(lowest_mean_loss_choice({1.0, 1.0}), 0);
  EXPECT_EQ(lowest_mean_loss_choice({2.0, 1.0, 1.0}), 1);
  EXPECT_EQ(lowest_mean_loss_choice({nan, 0.5}), 0);  // as Python: nothing is < a leading NaN
  EXPECT_EQ(lowest_mean_loss_choice({3.0, nan, 1.0}), 2);
  EXPECT_NEAR(centered_accuracy(0.25, 25), 0.0, 1e-15);
  EXPECT_DOUBLE_EQ(centered_accuracy(1.0, 62), 1.0);
  EXPECT_DOUBLE_EQ(centered_accuracy(0.5, 0), 0.5);
}

TEST(CoreEval, ResultsDoNotDependOnBatchingOrPrefixReuse) {
  auto bundle = load_core_bundle(test::small_core_bundle());
  test::ToyEncoder enc;
  auto run = [&](int64_t batch_tokens, int64_t chunk_rows, bool groups) {
    test::HashFakeScorer fake(40);
    struct Flat : SequenceScorer {  // hides score_groups: the default flattening path
      test::HashFakeScorer& inner;
      explicit Flat(test::HashFakeScorer& f) : inner(f) {}
      int64_t context_length() const override { return inner.context_length(); }
      void score(const std::vector<std::vector<int32_t>>& s, std::vector<SequenceScores>& o) override { inner.score(s, o); }
    } flat(fake);
    CoreOptions opt;
    opt.batch_tokens = batch_tokens;
    opt.chunk_rows = chunk_rows;
    opt.keep_rows = true;
    SequenceScorer& scorer = groups ? static_cast<SequenceScorer&>(fake) : flat;
    auto result = evaluate_core(bundle, enc, scorer, opt);
    if (groups) EXPECT_GT(fake.prefix_tokens_reused, 0);
    return core_rows_json(result);
  };
  auto reference = run(1, 1, false);
  for (auto [tokens, chunk, groups] : {std::tuple{1, 1, true}, {64, 3, true}, {100000, 512, true}, {100000, 2, false}}) {
    auto other = run(tokens, chunk, groups);
    for (auto* j : {&other, &reference})
      for (auto& t : (*j)["tasks"]) t["seconds"] = t["cpu_seconds"] = 0;
    EXPECT_EQ(other, reference) << "batch_tokens " << tokens << " chunk " << chunk << " groups " << groups;
  }
}

TEST(CoreEval, FewShotsFromFewRowsAndMaxPerTask) {
  auto bundle = load_core_bundle(test::small_core_bundle());
  test::ToyEncoder enc;
  test::HashFakeScorer fake(64);
  CoreOptions opt;
  opt.tasks = {"lm_answer"};
  opt.keep_rows = true;
  auto r = evaluate_core(bundle, enc, fake, opt);
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_TRUE(r.task_subset);
  EXPECT_EQ(r.metric_name, "CORE-1");
  EXPECT_TRUE(r.missing_tasks.empty()) << "a chosen subset names no absent task (the bundle lacks absent_task)";
  EXPECT_EQ(evaluate_core(bundle, enc, fake, {}).missing_tasks, std::vector<std::string>{"absent_task"});
  // n = 3, k = 2: each row's shots are exactly the two other rows, in sample() order.
  for (const auto& row : r.tasks[0].row_records) {
    std::vector<int64_t> want;
    for (size_t i : core_fewshot_indices(3, row.idx, 2)) want.push_back(static_cast<int64_t>(i));
    EXPECT_EQ(row.fewshot, want);
    EXPECT_EQ(row.fewshot.size(), 2u);
    EXPECT_EQ(std::count(row.fewshot.begin(), row.fewshot.end(), row.idx), 0);
  }
  // max_per_task 2 leaves too few rows for 2 shots: a clear error.
  opt.max_per_task = 2;
  try {
    evaluate_core(bundle, enc, fake, opt);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 shots need more than 2 rows"), std::string::npos) << e.what();
  }
  // max_per_task keeps the first rows after the shuffle.
  opt.tasks = {"mc_default"};
  opt.max_per_task = 4;
  auto r4 = evaluate_core(bundle, enc, fake, opt);
  EXPECT_EQ(r4.tasks[0].rows, 4);
  auto all = load_core_rows(bundle.task("mc_default").data_path, CoreTaskType::kMultipleChoice);
  auto shuffled = core_shuffled_rows(all, 4);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r4.tasks[0].row_records[i].line, shuffled[i].line);
  EXPECT_THROW(evaluate_core(bundle, enc, fake, CoreOptions{.tasks = {"absent_task"}}), Error);
  EXPECT_THROW(evaluate_core(bundle, enc, fake, CoreOptions{.tasks = {"nope"}}), Error);
}

// A model whose losses are NaN would give a finite CORE (a NaN mean loss never wins, so the first
// choice would): it is an error naming the task, the row and the position.
TEST(CoreEval, ANonFiniteLossIsAnError) {
  class NanScorer final : public SequenceScorer {
   public:
    int64_t context_length() const override { return 64; }
    void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) override {
      out.assign(sequences.size(), {});
      for (size_t s = 0; s < sequences.size(); ++s) {
        out[s].loss.assign(sequences[s].size() - 1, std::nanf(""));
        out[s].argmax.assign(sequences[s].size() - 1, 0);
      }
    }
  } nan_scorer;
  test::ToyEncoder enc;
  const CoreBundle bundle = load_core_bundle(test::small_core_bundle());
  for (const char* label : {"mc_default", "schema_zero", "lm_default"}) {
    CoreOptions opt;
    opt.tasks = {label};
    const std::string e = test::error_of([&] { evaluate_core(bundle, enc, nan_scorer, opt); });
    EXPECT_NE(e.find(str("task '", label, "' (")), std::string::npos) << e;
    EXPECT_NE(e.find("): the model's loss at position "), std::string::npos) << e;
    EXPECT_NE(e.find(" is nan: the model's outputs are not finite"), std::string::npos) << e;
  }
}

TEST(CoreEval, ReadGuardSeesEveryFileAndRefusesOthers) {
  test::ToyEncoder enc;
  test::HashFakeScorer fake(64);
  ReadGuard guard;
  guard.allow(test::small_core_bundle());
  CoreOptions opt;
  opt.read_guard = &guard;
  opt.tasks = {"mc_default", "lm_merge"};
  evaluate_core(load_core_bundle(test::small_core_bundle(), &guard), enc, fake, opt);
  const auto b = canonical_for_guard(test::small_core_bundle());
  EXPECT_EQ(guard.opened(), (std::vector<std::string>{(b / "core.yaml").string(), (b / "eval_meta_data.csv").string(),
                                                      (b / "eval_data/mc/mc_default.jsonl").string(),
                                                      (b / "eval_data/lm/lm_merge.jsonl").string()}));
  test::TempDir elsewhere;
  ReadGuard strict;
  strict.allow(elsewhere.path());
  try {
    load_core_bundle(test::small_core_bundle(), &strict);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ct
