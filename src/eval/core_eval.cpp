#include "eval/core_eval.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <exception>
#include <limits>
#include <map>
#include <mutex>

#include "eval/core_prompts.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/python_random.h"
#include "util/read_guard.h"

namespace ct {

namespace {

// CPU time of the whole process (all threads): on a shared machine it says what a task cost when
// the wall clock mostly measures the other programs.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

double centered_accuracy(double accuracy, double random_baseline_percent) {
  const double rb = 0.01 * random_baseline_percent;
  return (accuracy - rb) / (1.0 - rb);
}

int lowest_mean_loss_choice(const std::vector<double>& mean_losses) {
  // Python: min() keeps the first element unless a later one is strictly smaller (a NaN never is,
  // and nothing is smaller than a leading NaN); index() then finds that first occurrence.
  int best = 0;
  for (size_t i = 1; i < mean_losses.size(); ++i)
    if (mean_losses[i] < mean_losses[best]) best = static_cast<int>(i);
  return best;
}

double span_mean_loss(const SequenceScores& scores, const CoreSequence& seq) {
  const int64_t count = seq.span_end - seq.span_begin;
  if (count <= 0) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (int64_t t = seq.span_begin; t < seq.span_end; ++t) sum += static_cast<double>(scores.loss.at(t - 1));
  return sum / static_cast<double>(count);
}

bool span_greedy_match(const SequenceScores& scores, const CoreSequence& seq) {
  for (int64_t t = seq.span_begin; t < seq.span_end; ++t)
    if (scores.argmax.at(t - 1) != seq.tokens[t]) return false;
  return true;
}

std::vector<CoreRow> core_shuffled_rows(std::vector<CoreRow> rows, int64_t max_per_task) {
  PythonRandom(1337).shuffle(rows);
  if (max_per_task > 0 && static_cast<int64_t>(rows.size()) > max_per_task) rows.resize(max_per_task);
  return rows;
}

namespace {

struct PreparedRow {
  std::vector<size_t> fewshot;
  std::vector<std::string> prompts;
  CoreQuestion question;
};

PreparedRow prepare_row(const CoreTaskSpec& spec, const std::vector<CoreRow>& rows, size_t idx,
                        const TextEncoder& encoder, int64_t max_len) {
  PreparedRow p;
  p.fewshot = core_fewshot_indices(rows.size(), idx, spec.num_fewshot);
  std::vector<const CoreRow*> shots;
  for (size_t i : p.fewshot) shots.push_back(&rows[i]);
  p.prompts = render_core_prompts(spec.type, spec.continuation_delimiter, rows[idx], shots);
  p.question = build_core_question(spec.type, p.prompts, rows[idx].gold, encoder, max_len);
  return p;
}

ScoreGroup make_group(const CoreQuestion& q) {
  ScoreGroup g;
  int64_t first_needed = std::numeric_limits<int64_t>::max();
  for (const auto& s : q.sequences) {
    g.sequences.push_back(s.tokens);
    first_needed = std::min(first_needed, s.span_begin - 1);
  }
  g.shared_prefix_tokens = common_token_length(g.sequences, false);
  g.first_needed_position = std::max<int64_t>(0, first_needed);
  return g;
}

// The verdict of one question from its sequences' scores.
void judge(CoreTaskType type, const CoreQuestion& q, const std::vector<SequenceScores>& scores, CoreRowRecord& rec) {
  if (type == CoreTaskType::kLanguageModeling) {
    rec.correct = span_greedy_match(scores.at(0), q.sequences.at(0));
    return;
  }
  rec.mean_losses.clear();
  for (size_t i = 0; i < q.sequences.size(); ++i) rec.mean_losses.push_back(span_mean_loss(scores[i], q.sequences[i]));
  rec.pred = lowest_mean_loss_choice(rec.mean_losses);
  rec.correct = rec.pred == q.gold;
}

}  // namespace

CoreTaskResult evaluate_core_task(const CoreTaskSpec& spec, std::vector<CoreRow> all_rows, const TextEncoder& encoder,
                                  SequenceScorer& scorer, const CoreOptions& options) {
  Stopwatch watch;
  const double cpu_start = process_cpu_seconds();
  CoreTaskResult result;
  result.label = spec.label;
  result.type = spec.type;
  result.num_fewshot = spec.num_fewshot;
  result.continuation_delimiter = spec.continuation_delimiter;
  result.random_baseline_percent = spec.random_baseline_percent;

  const std::vector<CoreRow> rows = core_shuffled_rows(std::move(all_rows), options.max_per_task);
  const auto n = static_cast<int64_t>(rows.size());
  check(spec.num_fewshot < n, "task '", spec.label, "': ", spec.num_fewshot, " shots need more than ",
        spec.num_fewshot, " rows, but ", n, " are kept", options.max_per_task > 0 ? " (raise --max-per-task)" : "");
  const int64_t max_len = scorer.context_length();
  check(max_len >= 2, "the model's context must hold at least 2 tokens, got ", max_len);
  const int64_t chunk = std::max<int64_t>(1, options.chunk_rows);

  for (int64_t chunk_begin = 0; chunk_begin < n; chunk_begin += chunk) {
    const int64_t chunk_end = std::min(n, chunk_begin + chunk);
    std::vector<PreparedRow> prepared(static_cast<size_t>(chunk_end - chunk_begin));
    // Rows are independent: render and tokenize them in parallel (deterministic per row).
    std::exception_ptr error;
    std::mutex error_mutex;
#pragma omp parallel for schedule(dynamic, 4) if (chunk_end - chunk_begin >= 16)
    for (int64_t i = chunk_begin; i < chunk_end; ++i) {
      try {
        prepared[i - chunk_begin] = prepare_row(spec, rows, static_cast<size_t>(i), encoder, max_len);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const Error& e) {
        fail("task '", spec.label, "' (", spec.data_path.string(), "): ", e.what());
      }
    }

    // Fill scorer calls with whole questions, in row order.
    int64_t next = chunk_begin;
    while (next < chunk_end) {
      std::vector<ScoreGroup> groups;
      std::vector<int64_t> group_rows;
      int64_t tokens = 0;
      int64_t i = next;
      for (; i < chunk_end && (groups.empty() || tokens < options.batch_tokens); ++i) {
        const CoreQuestion& q = prepared[i - chunk_begin].question;
        if (q.prefix_mismatch) continue;  // wrong by rule; nothing to score
        for (const auto& s : q.sequences) tokens += static_cast<int64_t>(s.tokens.size());
        groups.push_back(make_group(q));
        group_rows.push_back(i);
      }
      std::vector<std::vector<SequenceScores>> scores;
      if (!groups.empty()) scorer.score_groups(groups, scores);
      check(scores.size() == groups.size(), "scorer returned ", scores.size(), " groups for ", groups.size());
      std::map<int64_t, size_t> scored;  // row -> group
      for (size_t g = 0; g < group_rows.size(); ++g) scored[group_rows[g]] = g;
      for (int64_t r = next; r < i; ++r) {
        PreparedRow& p = prepared[r - chunk_begin];
        CoreRowRecord rec;
        rec.idx = r;
        rec.line = rows[r].line;
        if (!p.question.prefix_mismatch) {
          const auto& s = scores[scored.at(r)];
          check(s.size() == p.question.sequences.size(), "scorer returned a group of the wrong size");
          for (size_t k = 0; k < s.size(); ++k) {
            const CoreSequence& seq = p.question.sequences[k];
            const size_t want = seq.tokens.size() - 1;
            check(s[k].loss.size() == want && s[k].argmax.size() == want, "scorer returned ", s[k].loss.size(),
                  " losses and ", s[k].argmax.size(), " argmax for a sequence of ", want + 1, " tokens");
            // A NaN loss never wins the lowest-mean-loss choice, nor the greedy match's argmax a fair
            // one: the verdict would be a number, but not a score.
            for (int64_t t = seq.span_begin; t < seq.span_end; ++t)
              if (!std::isfinite(s[k].loss[t - 1]))
                fail("task '", spec.label, "' (", spec.data_path.string(), ":", rows[r].line,
                     "): the model's loss at position ", t, " of sequence ", k, " is ", s[k].loss[t - 1],
                     ": the model's outputs are not finite");
          }
          judge(spec.type, p.question, s, rec);
        }
        result.rows += 1;
        result.correct += rec.correct ? 1 : 0;
        result.truncated_rows += p.question.truncated ? 1 : 0;
        result.clamped_rows += p.question.clamped ? 1 : 0;
        result.prefix_mismatch_rows += p.question.prefix_mismatch ? 1 : 0;
        if (options.keep_rows) {
          rec.fewshot.assign(p.fewshot.begin(), p.fewshot.end());
          rec.prompts = std::move(p.prompts);
          rec.question = std::move(p.question);
          result.row_records.push_back(std::move(rec));
        }
      }
      next = i;
      if (options.progress) options.progress(spec.label, next, n);
    }
  }
  result.accuracy = static_cast<double>(result.correct) / static_cast<double>(result.rows);
  result.centered = centered_accuracy(result.accuracy, spec.random_baseline_percent);
  result.seconds = watch.seconds();
  result.cpu_seconds = process_cpu_seconds() - cpu_start;
  return result;
}

CoreResult evaluate_core(const CoreBundle& bundle, const TextEncoder& encoder, SequenceScorer& scorer,
                         const CoreOptions& options) {
  CoreResult result;
  result.max_per_task = options.max_per_task;
  std::vector<const CoreTaskSpec*> chosen;
  if (options.tasks.empty()) {
    result.missing_tasks = bundle.missing_labels();  // (with --tasks every chosen task is present)
    for (const auto& t : bundle.tasks)
      if (t.data_present) chosen.push_back(&t);
  } else {
    for (const auto& label : options.tasks) {
      const CoreTaskSpec& t = bundle.task(label);
      check(t.data_present, "task '", label, "': data file not found: ", t.data_path.string());
      chosen.push_back(&t);
    }
    result.task_subset = chosen.size() < bundle.tasks.size() - bundle.missing_labels().size();
  }
  // Tasks sharing a data file (hellaswag, hellaswag_zeroshot) read it once.
  std::map<std::pair<std::string, int>, std::vector<CoreRow>> loaded;
  double centered_sum = 0;
  for (const CoreTaskSpec* t : chosen) {
    auto key = std::make_pair(t->data_path.string(), static_cast<int>(t->type));
    auto it = loaded.find(key);
    if (it == loaded.end()) {
      if (options.read_guard) options.read_guard->admit(t->data_path);
      it = loaded.emplace(key, load_core_rows(t->data_path, t->type)).first;
    }
    result.tasks.push_back(evaluate_core_task(*t, it->second, encoder, scorer, options));
    centered_sum += result.tasks.back().centered;
  }
  check(!result.tasks.empty(), bundle.root.string(), ": no task to evaluate (every data file is missing)");
  result.core = centered_sum / static_cast<double>(result.tasks.size());
  result.metric_name = result.tasks.size() == bundle.tasks.size() ? std::string("CORE")
                                                                  : str("CORE-", result.tasks.size());
  return result;
}

}  // namespace ct
