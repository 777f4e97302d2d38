// val_bpb against a fake model whose per-position loss is known: a hand-computed case, invariance
// under rows per call and thread count, the token cap, the last partial row, and bad input.
#include "eval/bpb.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "data/data_test_support.h"
#include "test_support.h"
#include "util/error.h"
#include "util/threads.h"

namespace ct {
namespace {

// loss at row position i predicting t = 0.125 * (t % 8) + 0.5 * (i % 2), exact in float.
class PositionFake final : public SequenceScorer {
 public:
  explicit PositionFake(int64_t context) : context_(context) {}
  int64_t context_length() const override { return context_; }
  void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) override {
    calls += 1;
    out.assign(sequences.size(), {});
    for (size_t s = 0; s < sequences.size(); ++s) {
      const auto& t = sequences[s];
      EXPECT_LE(static_cast<int64_t>(t.size()), context_ + 1);
      for (size_t i = 0; i + 1 < t.size(); ++i) {
        out[s].loss.push_back(static_cast<float>(0.125 * (t[i + 1] % 8) + 0.5 * (i % 2)));
        out[s].argmax.push_back(0);
      }
    }
  }
  static double loss(int32_t target, int64_t position) { return 0.125 * (target % 8) + 0.5 * (position % 2); }
  int64_t calls = 0;

 private:
  int64_t context_;
};

std::vector<int32_t> byte_token_bytes() {
  std::vector<int32_t> tb(257, 1);
  tb[256] = 0;  // <|bos|>
  return tb;
}

TEST(Bpb, HandComputedCase) {
  test::ByteEncoder enc;
  auto stream = tokenize_documents({"ab", "c"}, enc);
  ASSERT_EQ(stream, (std::vector<int32_t>{256, 97, 98, 256, 99}));
  PositionFake fake(2);
  auto r = evaluate_bpb(stream, byte_token_bytes(), fake, BpbOptions{});
  // rows [256 97 98] and [98 256 99]; targets 97@0, 98@1, 256@0 (special: skipped), 99@1
  EXPECT_EQ(r.rows, 2);
  EXPECT_EQ(r.targets, 4);
  EXPECT_EQ(r.counted_targets, 3);
  EXPECT_EQ(r.bytes, 3);
  EXPECT_EQ(r.nats, 0.125 + 0.75 + 0.875);
  EXPECT_EQ(r.bpb, 1.75 / (std::numbers::ln2 * 3));
}

// A target belongs to the document that holds it, even in a row that another document begins.
TEST(Bpb, HandComputedCasePerDocument) {
  test::ByteEncoder enc;
  std::vector<int64_t> starts;
  auto stream = tokenize_documents({"ab", "c"}, enc, &starts);
  ASSERT_EQ(starts, (std::vector<int64_t>{0, 3}));
  PositionFake fake(2);
  BpbOptions opt;
  opt.document_starts = starts;
  auto r = evaluate_bpb(stream, byte_token_bytes(), fake, opt);
  ASSERT_EQ(r.documents.size(), 2u);
  // "ab": 97@0 and 98@1 of row [256 97 98]; "c": 99@1 of row [98 256 99]
  EXPECT_EQ(r.documents[0].document, 0);
  EXPECT_EQ(r.documents[0].nats, 0.125 + 0.75);
  EXPECT_EQ(r.documents[0].bytes, 2);
  EXPECT_EQ(r.documents[1].document, 1);
  EXPECT_EQ(r.documents[1].nats, 0.875);
  EXPECT_EQ(r.documents[1].bytes, 1);
  EXPECT_EQ(r.documents[1].counted_targets, 1);
  EXPECT_EQ(r.documents[1].bpb(), 0.875 / std::numbers::ln2);
  // Starts that do not begin at 0 or do not increase are refused.
  opt.document_starts = {1, 3};
  EXPECT_NE(test::error_of([&] { evaluate_bpb(stream, byte_token_bytes(), fake, opt); }).find("the first must be 0"),
            std::string::npos);
  opt.document_starts = {0, 3, 3};
  EXPECT_THROW(evaluate_bpb(stream, byte_token_bytes(), fake, opt), Error);
}

TEST(Bpb, KnownAnswerIndependentOfRowsPerCallAndThreads) {
  test::TempDir dir;
  std::vector<std::pair<std::string, std::string>> docs;
  for (int d = 0; d < 23; ++d) {
    std::string text;
    for (int i = 0; i < 37 * d + 5; ++i) text += static_cast<char>('a' + (i * 7 + d) % 26);
    text += " caf\xC3\xA9";  // two UTF-8 bytes, two byte tokens
    docs.push_back({std::to_string(d), text});
  }
  test::write_jsonl(dir / "val" / "val_000.jsonl.zst", docs);
  std::vector<std::string> names;
  auto texts = read_documents(dir / "val", &names);
  ASSERT_EQ(texts.size(), docs.size());
  EXPECT_EQ(texts[3], docs[3].second);
  ASSERT_EQ(names.size(), docs.size());
  EXPECT_EQ(names[3], "3");  // the JSON "id"

  test::ByteEncoder enc;
  const int64_t T = 64;
  set_thread_count(1);
  std::vector<int64_t> starts;
  auto stream = tokenize_documents(texts, enc, &starts);
  set_thread_count(2);
  EXPECT_EQ(tokenize_documents(texts, enc), stream);
  set_thread_count(0);
  ASSERT_EQ(starts.size(), docs.size());
  for (size_t d = 0; d < starts.size(); ++d) EXPECT_EQ(stream[starts[d]], 256) << d;  // each starts at its BOS

  // The expected sums, from the definition: target j (1 <= j < n) sits at row position (j-1) % T.
  auto expected = [&](int64_t n) {
    double nats = 0;
    int64_t bytes = 0;
    for (int64_t j = 1; j < n; ++j) {
      if (stream[j] == 256) continue;
      nats += PositionFake::loss(stream[j], (j - 1) % T);
      bytes += 1;
    }
    return std::pair{nats, bytes};
  };
  const auto [nats, bytes] = expected(static_cast<int64_t>(stream.size()));
  ASSERT_NE((stream.size() - 1) % T, 0u) << "the test wants a partial last row";
  // Each document's sums from the definition: its targets are stream[starts[d] + 1, next start].
  std::vector<double> doc_nats(starts.size());
  std::vector<int64_t> doc_bytes(starts.size());
  for (size_t d = 0; d < starts.size(); ++d) {
    const int64_t end = d + 1 < starts.size() ? starts[d + 1] : static_cast<int64_t>(stream.size());
    for (int64_t j = starts[d] + 1; j < end; ++j) {
      doc_nats[d] += PositionFake::loss(stream[j], (j - 1) % T);
      doc_bytes[d] += 1;
    }
  }
  BpbResult first;
  for (int64_t per_call : {1, 3, 1000}) {
    PositionFake fake(T);
    BpbOptions opt;
    opt.rows_per_call = per_call;
    opt.document_starts = starts;
    auto r = evaluate_bpb(stream, byte_token_bytes(), fake, opt);
    EXPECT_EQ(r.rows, static_cast<int64_t>((stream.size() - 1 + T - 1) / T));
    EXPECT_EQ(r.bytes, bytes);
    EXPECT_DOUBLE_EQ(r.nats, nats);
    EXPECT_DOUBLE_EQ(r.bpb, nats / (std::log(2.0) * bytes));
    ASSERT_EQ(r.documents.size(), starts.size());
    double parts_nats = 0;
    int64_t parts_bytes = 0;
    for (size_t d = 0; d < starts.size(); ++d) {
      EXPECT_EQ(r.documents[d].bytes, doc_bytes[d]) << d;
      EXPECT_DOUBLE_EQ(r.documents[d].nats, doc_nats[d]) << d;
      parts_nats += r.documents[d].nats;
      parts_bytes += r.documents[d].bytes;
    }
    EXPECT_DOUBLE_EQ(parts_nats, r.nats);
    EXPECT_EQ(parts_bytes, r.bytes);
    if (per_call == 1) {
      first = r;
    } else {
      EXPECT_EQ(r.nats, first.nats);  // bit for bit
      EXPECT_EQ(r.bpb, first.bpb);
    }
  }
  // A token cap evaluates exactly the first N targets.
  PositionFake fake(T);
  BpbOptions capped;
  capped.max_target_tokens = 100;
  capped.document_starts = starts;
  auto r = evaluate_bpb(stream, byte_token_bytes(), fake, capped);
  EXPECT_EQ(r.targets, 100);
  // Only the documents the cap reaches have a part.
  const int64_t reached = std::lower_bound(starts.begin(), starts.end(), 100) - starts.begin();  // BOS before 100
  EXPECT_EQ(static_cast<int64_t>(r.documents.size()), reached);
  const auto [cap_nats, cap_bytes] = expected(101);
  EXPECT_EQ(r.bytes, cap_bytes);
  EXPECT_DOUBLE_EQ(r.nats, cap_nats);
  // A shorter sequence_len than the model's context is allowed; a longer one is not.
  BpbOptions shorter;
  shorter.sequence_len = 16;
  EXPECT_EQ(evaluate_bpb(stream, byte_token_bytes(), fake, shorter).sequence_len, 16);
  BpbOptions longer;
  longer.sequence_len = T + 1;
  EXPECT_THROW(evaluate_bpb(stream, byte_token_bytes(), fake, longer), Error);
}

// A model whose loss is NaN at one target (a NaN weight that only some tokens reach, an overflow):
// never a val_bpb of nan with exit 0, but an error naming where.
TEST(Bpb, ANonFiniteLossIsAnErrorNamingTheTarget) {
  class NanAtC final : public SequenceScorer {
   public:
    int64_t context_length() const override { return 2; }
    void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<SequenceScores>& out) override {
      out.assign(sequences.size(), {});
      for (size_t s = 0; s < sequences.size(); ++s)
        for (size_t i = 0; i + 1 < sequences[s].size(); ++i) {
          out[s].loss.push_back(sequences[s][i + 1] == 'c' ? std::nanf("") : 1.0f);
          out[s].argmax.push_back(0);
        }
    }
  } fake;
  test::ByteEncoder enc;
  // rows [256 97 98] and [98 256 99]: 'c' (99) is the target at stream position 4, in row 1
  const std::vector<int32_t> stream = tokenize_documents({"ab", "c"}, enc);
  const std::string e = test::error_of([&] { evaluate_bpb(stream, byte_token_bytes(), fake, BpbOptions{}); });
  EXPECT_NE(e.find("val_bpb: the model's loss for the target at stream position 4 (row 1, token 99) is nan"),
            std::string::npos)
      << e;
}

TEST(Bpb, BadInput) {
  PositionFake fake(8);
  EXPECT_THROW(evaluate_bpb({256}, byte_token_bytes(), fake, BpbOptions{}), Error);
  EXPECT_THROW(evaluate_bpb({256, 999}, byte_token_bytes(), fake, BpbOptions{}), Error);
  EXPECT_THROW(evaluate_bpb({256, 256}, byte_token_bytes(), fake, BpbOptions{}), Error);  // no bytes
  test::TempDir dir;
  EXPECT_THROW(read_documents(dir / "nothing"), Error);
}

}  // namespace
}  // namespace ct
