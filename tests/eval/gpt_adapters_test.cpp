// The real GPT behind the evaluators' interfaces (a tiny random model on the CPU backend): the
// scorer's packed, padded batches give each sequence's losses as a lone forward pass does; greedy
// sampling through the KV cache follows the argmax of full forward passes; CORE runs end to end.
#include "eval/gpt_adapters.h"

#include <cmath>
#include <random>
#include <string>

#include "data/data_test_support.h"
#include "eval/core_eval.h"
#include "backend/cpu/cpu_backend.h"
#include "eval/core_report.h"
#include "test_support.h"
#include "bf16_engine_support.h"

namespace ct {
namespace {

BackendOptions cpu_options(MatmulPrecision matmul_precision) {
  BackendOptions o;
  o.matmul_precision = matmul_precision;
  return o;
}

struct TinyGpt {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<GPT> model;
  explicit TinyGpt(int64_t vocab = 257, int64_t context = 48, MatmulPrecision matmul_precision = MatmulPrecision::f32)
      : backend(make_cpu_backend(cpu_options(matmul_precision))) {
    ModelConfig c;
    c.vocab_size = vocab;
    c.sequence_len = context;
    c.n_layer = 2;
    c.n_embd = 32;
    c.n_head = 2;
    c.n_kv_head = 2;
    c.validate("test");
    model = std::make_unique<GPT>(*backend, c);
    model->initialize(7);
    // The seeded init zeroes lm_head and the output projections (every logit 0); give them values.
    std::mt19937 gen(11);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    for (auto& p : model->parameters()) {
      if (p.spec.init != ParamInit::zero) continue;
      std::vector<float> host(static_cast<size_t>(p.value.tensor().numel()));
      for (auto& v : host) v = normal(gen);
      backend->upload(p.value, host.data(), DType::f32);
    }
  }
};

// Each sequence scored alone, as one row of exactly its length.
std::vector<SequenceScores> one_by_one(GPT& model, const std::vector<std::vector<int32_t>>& seqs) {
  std::vector<SequenceScores> out(seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t T = static_cast<int64_t>(seqs[s].size()) - 1;
    if (T < 1) continue;
    std::vector<int32_t> in(seqs[s].begin(), seqs[s].end() - 1), tg(seqs[s].begin() + 1, seqs[s].end());
    out[s].loss.resize(T);
    out[s].argmax.resize(T);
    model.evaluate(in.data(), tg.data(), 1, T, out[s].loss.data(), out[s].argmax.data());
  }
  return out;
}

TEST(GptAdapters, PackedBatchesMatchLoneSequences) {
  TinyGpt tiny;
  std::mt19937 gen(3);
  std::vector<std::vector<int32_t>> seqs;
  for (int len : {49, 2, 17, 1, 33, 33, 8, 49, 5}) {
    std::vector<int32_t> s(len);
    for (auto& t : s) t = static_cast<int32_t>(gen() % 257);
    seqs.push_back(s);
  }
  auto want = one_by_one(*tiny.model, seqs);
  for (int64_t batch_tokens : {1, 100, 100000}) {
    GptSequenceScorer scorer(*tiny.model, batch_tokens);
    EXPECT_EQ(scorer.context_length(), 48);
    std::vector<SequenceScores> got;
    scorer.score(seqs, got);
    ASSERT_EQ(got.size(), seqs.size());
    for (size_t s = 0; s < seqs.size(); ++s) {
      ASSERT_EQ(got[s].loss.size(), seqs[s].size() - 1) << s;
      for (size_t i = 0; i < got[s].loss.size(); ++i) {
        EXPECT_NEAR(got[s].loss[i], want[s].loss[i], 2e-5) << "seq " << s << " pos " << i;
        EXPECT_GT(got[s].loss[i], 0.0f);
      }
      EXPECT_EQ(got[s].argmax, want[s].argmax) << s;
    }
  }
  std::vector<SequenceScores> out;
  GptSequenceScorer scorer(*tiny.model);
  EXPECT_THROW(scorer.score({std::vector<int32_t>(50, 1)}, out), Error);  // 50 > 48 + 1
  EXPECT_THROW(scorer.score({{1, 300}}, out), Error);                     // outside the vocabulary
}

// score_groups with prefix reuse (model/shared_prefix_eval.h) against each sequence scored alone:
// equal at every position the caller reads (>= first_needed_position), whatever the pass size.
// With bf16 matmuls (the mixed-precision backend) the two paths round the same activations to
// bf16 but may accumulate in another order, hence a looser loss tolerance there.
class SharedPrefixScoring : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedPrefixScoring, GroupsMatchLoneSequences) {
  const bool bf16 = GetParam() == "bf16";
  if (bf16) CT_SKIP_WITHOUT_BF16_ENGINE();
  TinyGpt tiny(257, 48, parse_matmul_precision(GetParam(), "test parameter"));
  const double tolerance = bf16 ? 1e-2 : 2e-5;
  int64_t compared = 0, argmax_differs = 0;
  std::mt19937 gen(5);
  auto random_tokens = [&](size_t n) {
    std::vector<int32_t> t(n);
    for (auto& v : t) v = static_cast<int32_t>(gen() % 257);
    return t;
  };
  // (prefix length, continuation lengths, first_needed offset from the prefix end)
  struct Shape {
    size_t prefix;
    std::vector<size_t> tails;
    int64_t needed_from_prefix_end;
  };
  const std::vector<Shape> shapes = {
      {20, {3, 7, 1, 12}, -1},  // multiple choice: the span starts right after the shared prefix
      {0, {10, 4}, 0},          // nothing shared (schema: the contexts differ)
      {30, {18}, -5},           // one sequence (language modeling): the prefix is most of it
      {47, {2, 2}, -1},         // reaches the context: 49 tokens = 48 inputs + 1 target
      {5, {0, 6, 9}, -1},       // one sequence is the prefix alone (its last token: only a target)
      {12, {4, 4, 4}, -12},     // every position wanted
      {1, {0}, 0},              // a single token: nothing to score
  };
  std::vector<ScoreGroup> groups;
  for (const Shape& sh : shapes) {
    ScoreGroup g;
    const auto prefix = random_tokens(sh.prefix);
    for (size_t tail : sh.tails) {
      auto s = prefix;
      auto t = random_tokens(tail);
      s.insert(s.end(), t.begin(), t.end());
      g.sequences.push_back(s);
    }
    g.shared_prefix_tokens = static_cast<int64_t>(sh.prefix);
    g.first_needed_position = std::max<int64_t>(0, static_cast<int64_t>(sh.prefix) + sh.needed_from_prefix_end);
    groups.push_back(g);
  }
  for (int64_t batch_tokens : {1, 64, 100000}) {
    GptSequenceScorer scorer(*tiny.model, batch_tokens);
    std::vector<std::vector<SequenceScores>> got;
    scorer.score_groups(groups, got);
    ASSERT_EQ(got.size(), groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      auto want = one_by_one(*tiny.model, groups[g].sequences);
      ASSERT_EQ(got[g].size(), groups[g].sequences.size());
      for (size_t s = 0; s < want.size(); ++s) {
        const size_t n = groups[g].sequences[s].size() < 2 ? 0 : groups[g].sequences[s].size() - 1;
        ASSERT_EQ(got[g][s].loss.size(), n) << g << "/" << s;
        ASSERT_EQ(got[g][s].argmax.size(), n) << g << "/" << s;
        for (size_t i = static_cast<size_t>(groups[g].first_needed_position); i < n; ++i) {
          EXPECT_NEAR(got[g][s].loss[i], want[s].loss[i], tolerance) << "group " << g << " seq " << s << " pos " << i;
          if (!bf16) EXPECT_EQ(got[g][s].argmax[i], want[s].argmax[i]) << "group " << g << " seq " << s << " pos " << i;
          compared += 1;
          argmax_differs += got[g][s].argmax[i] != want[s].argmax[i] ? 1 : 0;
        }
      }
    }
  }
  EXPECT_GT(compared, 300);
  EXPECT_LE(argmax_differs, compared / 50);  // bf16: a near-tie may flip, rarely
  // A group whose sequences do not share the prefix they claim is refused.
  ScoreGroup bad;
  bad.sequences = {{1, 2, 3, 4}, {1, 9, 3, 4}};
  bad.shared_prefix_tokens = 3;
  bad.first_needed_position = 3;
  GptSequenceScorer scorer(*tiny.model);
  std::vector<std::vector<SequenceScores>> out;
  EXPECT_THROW(scorer.score_groups({bad}, out), Error);
}

INSTANTIATE_TEST_SUITE_P(MatmulPrecision, SharedPrefixScoring, ::testing::Values("f32", "bf16"));

TEST(GptAdapters, GreedySamplingFollowsFullForwardArgmax) {
  TinyGpt tiny;
  GptNextTokenModel next(*tiny.model);
  SampleOptions opt;
  opt.temperature = 0;
  opt.max_tokens = 20;
  std::vector<int32_t> prompt = {256, 72, 101, 108, 108, 111};
  auto generated = sample_tokens(next, prompt, opt);
  ASSERT_EQ(generated.size(), 20u);
  // Recompute each step with a full forward pass over everything so far.
  std::vector<int32_t> seq = prompt;
  for (int32_t token : generated) {
    std::vector<int32_t> with_dummy = seq;
    with_dummy.push_back(0);
    auto s = one_by_one(*tiny.model, {with_dummy});
    EXPECT_EQ(token, s[0].argmax.back());
    seq.push_back(token);
  }
  // Same seed, same text; a different seed, (almost surely) another.
  opt.temperature = 1.0;
  opt.top_k = 50;
  auto a = sample_tokens(next, prompt, opt);
  auto b = sample_tokens(next, prompt, opt);
  EXPECT_EQ(a, b);
  opt.seed = 43;
  EXPECT_NE(sample_tokens(next, prompt, opt), a);
  // The context bounds the generation: 6 prompt tokens + 42 new fill the 48 positions.
  opt.max_tokens = 1000;
  EXPECT_EQ(sample_tokens(next, prompt, opt).size(), 43u);
}

TEST(GptAdapters, CoreEndToEndOnTheSmallBundle) {
  TinyGpt tiny(257, 40);
  test::ByteEncoder enc;
  auto bundle = load_core_bundle(test::source_dir() / "tests/data/core_small");
  CoreOptions opt;
  opt.keep_rows = true;
  GptSequenceScorer scorer(*tiny.model);
  auto packed = evaluate_core(bundle, enc, scorer, opt);
  struct Lone : SequenceScorer {
    GPT& m;
    explicit Lone(GPT& model) : m(model) {}
    int64_t context_length() const override { return m.config().sequence_len; }
    void score(const std::vector<std::vector<int32_t>>& s, std::vector<SequenceScores>& o) override { o = one_by_one(m, s); }
  } lone(*tiny.model);
  auto reference = evaluate_core(bundle, enc, lone, opt);
  GptSequenceScorer plain_scorer(*tiny.model, 16384, /*reuse_prefixes=*/false);
  auto plain = evaluate_core(bundle, enc, plain_scorer, opt);
  ASSERT_EQ(packed.tasks.size(), reference.tasks.size());
  ASSERT_EQ(plain.tasks.size(), reference.tasks.size());
  for (size_t t = 0; t < plain.tasks.size(); ++t) {
    EXPECT_EQ(plain.tasks[t].correct, reference.tasks[t].correct) << plain.tasks[t].label;
    for (size_t r = 0; r < plain.tasks[t].row_records.size(); ++r) {
      const auto& a = plain.tasks[t].row_records[r].mean_losses;
      const auto& b = packed.tasks[t].row_records[r].mean_losses;
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        if (!std::isnan(a[i])) EXPECT_NEAR(a[i], b[i], 1e-5);
    }
  }
  int64_t truncated = 0;
  for (size_t t = 0; t < packed.tasks.size(); ++t) {
    EXPECT_EQ(packed.tasks[t].correct, reference.tasks[t].correct) << packed.tasks[t].label;
    truncated += packed.tasks[t].truncated_rows;
    for (size_t r = 0; r < packed.tasks[t].row_records.size(); ++r) {
      const auto& a = packed.tasks[t].row_records[r].mean_losses;
      const auto& b = reference.tasks[t].row_records[r].mean_losses;
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        if (!std::isnan(b[i])) EXPECT_NEAR(a[i], b[i], 1e-5);
    }
  }
  EXPECT_GT(truncated, 0);  // byte tokens make long prompts: the 40-token context cuts some
  EXPECT_TRUE(std::isfinite(packed.core));
}

TEST(Sampling, PickNextToken) {
  PythonRandom rng(1);
  EXPECT_EQ(pick_next_token({0.f, 3.f, 3.f, 1.f}, 0.0, 0, rng), 1);  // greedy: first of equal maxima
  EXPECT_EQ(pick_next_token({0.f, 3.f, 2.f, 1.f}, 5.0, 1, rng), 1);  // top_k 1 is greedy at any temperature
  // softmax([0, ln 3]) = [0.25, 0.75]
  int ones = 0;
  for (int i = 0; i < 4000; ++i) ones += pick_next_token({0.f, static_cast<float>(std::log(3.0))}, 1.0, 0, rng);
  EXPECT_NEAR(ones / 4000.0, 0.75, 0.025);
  // top_k 2 never picks outside the two largest.
  for (int i = 0; i < 200; ++i) {
    int32_t t = pick_next_token({5.f, -1.f, 4.f, 0.f}, 2.0, 2, rng);
    EXPECT_TRUE(t == 0 || t == 2);
  }
  EXPECT_THROW(pick_next_token({1.f}, -1.0, 0, rng), Error);
  // Non-finite logits are an error at any temperature (never a sampled token, never control bytes).
  for (const double temperature : {0.0, 1.0}) {
    const std::string e = test::error_of([&] { pick_next_token({0.f, std::nanf(""), 1.f}, temperature, 0, rng); });
    EXPECT_NE(e.find("sampling: the model's logit for token 1 is nan"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace ct
