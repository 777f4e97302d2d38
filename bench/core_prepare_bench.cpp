// The model-free part of CORE on the real bundle: shuffle, few-shot selection, rendering, tokenizing,
// spans, truncation, batching. The scorer is a null model (zero losses), so the time measured is
// what CORE costs besides the forward passes. Also counts the tokens a prefix-reusing (KV-cache)
// scorer would not recompute.
//
//   core_prepare_bench --tokenizer DIR [--bundle DIR] [--max-per-task N] [--context T] [--threads N]
//
// Prints per task: rows, sequences, tokens scored, tokens in shared prefixes, seconds; then totals
// with rows/s and tokens/s (wall) and the CPU seconds used.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "data/text_encoder.h"
#include "eval/core_eval.h"
#include "text/tokenizer.h"
#include "util/clock.h"
#include "util/data_dir.h"
#include "util/error.h"
#include "util/threads.h"

namespace {

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

class NullScorer final : public ct::SequenceScorer {
 public:
  explicit NullScorer(int64_t context) : context_(context) {}
  int64_t context_length() const override { return context_; }
  void score(const std::vector<std::vector<int32_t>>& sequences, std::vector<ct::SequenceScores>& out) override {
    out.assign(sequences.size(), {});
    this->sequences += static_cast<int64_t>(sequences.size());
    for (size_t s = 0; s < sequences.size(); ++s) {
      tokens += static_cast<int64_t>(sequences[s].size());
      out[s].loss.assign(sequences[s].size() - 1, 0.0f);
      out[s].argmax.assign(sequences[s].size() - 1, 0);
    }
  }
  void score_groups(const std::vector<ct::ScoreGroup>& groups,
                    std::vector<std::vector<ct::SequenceScores>>& out) override {
    calls += 1;
    for (const auto& g : groups) shared += g.shared_prefix_tokens * static_cast<int64_t>(g.sequences.size() - 1);
    SequenceScorer::score_groups(groups, out);
  }
  int64_t tokens = 0, shared = 0, calls = 0, sequences = 0;

 private:
  int64_t context_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_dir, bundle;
  int64_t max_per_task = 0, context = 1024;
  int threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--tokenizer") tokenizer_dir = argv[i + 1];
    else if (a == "--bundle") bundle = argv[i + 1];
    else if (a == "--max-per-task") max_per_task = std::atoll(argv[i + 1]);
    else if (a == "--context") context = std::atoll(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
  }
  if (tokenizer_dir.empty()) {
    std::fprintf(stderr, "usage: core_prepare_bench --tokenizer DIR [--bundle DIR] [--max-per-task N] [--context T] [--threads N]\n");
    return 2;
  }
  try {
    if (bundle.empty()) bundle = ct::DataLayout{ct::resolve_data_dir("")}.eval_bundle().string();
    const int used_threads = ct::set_thread_count(threads);
    ct::Tokenizer tokenizer = ct::Tokenizer::load(tokenizer_dir);
    auto encoder = ct::tokenizer_encoder(tokenizer);
    auto b = ct::load_core_bundle(bundle);
    std::printf("%-34s %7s %9s %12s %12s %8s\n", "task", "rows", "sequences", "tokens", "shared", "seconds");
    int64_t rows = 0, tokens = 0, shared = 0;
    double seconds = 0;
    const double cpu0 = process_cpu_seconds();
    for (const auto& t : b.tasks) {
      if (!t.data_present) continue;
      NullScorer scorer(context);
      ct::CoreOptions opt;
      opt.max_per_task = max_per_task;
      auto all_rows = ct::load_core_rows(t.data_path, t.type);
      ct::Stopwatch watch;
      auto r = ct::evaluate_core_task(t, all_rows, *encoder, scorer, opt);
      const double s = watch.seconds();
      std::printf("%-34s %7lld %9lld %12lld %12lld %8.2f\n", t.label.c_str(), static_cast<long long>(r.rows),
                  static_cast<long long>(scorer.sequences), static_cast<long long>(scorer.tokens),
                  static_cast<long long>(scorer.shared), s);
      rows += r.rows;
      tokens += scorer.tokens;
      shared += scorer.shared;
      seconds += s;
    }
    const double cpu = process_cpu_seconds() - cpu0;
    std::printf("total: %lld rows, %lld tokens scored (%.1f%% in prefixes shared within a question), %.1f s wall "
                "on %d threads, %.1f CPU s: %.0f rows/s, %.2fM tokens/s\n",
                static_cast<long long>(rows), static_cast<long long>(tokens), 100.0 * shared / tokens, seconds,
                used_threads, cpu, rows / seconds, tokens / seconds / 1e6);
  } catch (const ct::Error& e) {
    std::fprintf(stderr, "core_prepare_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
