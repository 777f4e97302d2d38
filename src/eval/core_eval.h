#pragma once
// The CORE evaluator (docs/eval.md): per task, shuffle the rows with Random(1337), keep max_per_task,
// pick few-shot rows with Random(1234 + idx).sample, render and tokenize the prompts, score them
// with a SequenceScorer, and turn losses into accuracy and centered accuracy; CORE is the mean of
// the centered accuracies over the tasks present.
//
// Batching: the sequences of one question form one ScoreGroup (a KV-cache model may reuse their
// shared prefix); groups of consecutive questions fill a scorer call up to batch_tokens tokens. Each
// question's verdict depends only on its own losses, so results do not depend on the batching.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/core_bundle.h"
#include "eval/core_spans.h"
#include "eval/sequence_scorer.h"
#include "data/text_encoder.h"

namespace ct {

struct CoreOptions {
  int64_t max_per_task = 0;        // keep the first N shuffled rows of each task; 0 = all (the score)
  std::vector<std::string> tasks;  // labels to evaluate; empty = every task whose data is present
  int64_t batch_tokens = 32768;    // tokens per scorer call (a question is never split)
  int64_t chunk_rows = 512;        // rows prepared (in parallel) before they are scored
  bool reuse_prefixes = true;      // GPT scorer: run each question's shared prefix once (false: the
                                   // plain path, every sequence in full; for checks and benchmarks)
  bool keep_rows = false;          // keep every row's prompts, tokens, spans and losses
  // Called after each scorer call: (task label, rows done, rows in the task).
  std::function<void(const std::string&, int64_t, int64_t)> progress;
  // When set, every task file is admitted by the guard before it is read (util/read_guard.h).
  ReadGuard* read_guard = nullptr;
};

// One evaluated row, kept when CoreOptions::keep_rows is set (for --dump-prompts and parity tests).
struct CoreRowRecord {
  int64_t idx = 0;                 // position after the shuffle
  int64_t line = 0;                // line in the data file
  std::vector<int64_t> fewshot;    // indices (after the shuffle) of the few-shot rows
  std::vector<std::string> prompts;
  CoreQuestion question;           // tokens and spans after truncation
  std::vector<double> mean_losses; // multiple_choice / schema: mean loss over each span
  int pred = -1;                   // multiple_choice / schema: the chosen option
  bool correct = false;
};

struct CoreTaskResult {
  std::string label;
  CoreTaskType type = CoreTaskType::kMultipleChoice;
  int num_fewshot = 0;
  std::string continuation_delimiter;
  double random_baseline_percent = 0;
  int64_t rows = 0;     // rows evaluated
  int64_t correct = 0;
  double accuracy = 0;  // correct / rows
  double centered = 0;  // (accuracy - 0.01*RB) / (1 - 0.01*RB)
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // the process's CPU time (every thread) while the task ran
  int64_t truncated_rows = 0;        // rows with a sequence longer than the context
  int64_t clamped_rows = 0;          // rows whose span was clamped to start at position 1
  int64_t prefix_mismatch_rows = 0;  // language_modeling rows counted wrong: no token prefix
  std::vector<CoreRowRecord> row_records;
};

struct CoreResult {
  std::vector<CoreTaskResult> tasks;
  std::vector<std::string> missing_tasks;  // listed in core.yaml, data file absent (all tasks asked for)
  std::string metric_name;                 // "CORE" when every listed task ran, else "CORE-<n>"
  double core = 0;                         // mean of centered over the evaluated tasks
  int64_t max_per_task = 0;
  bool task_subset = false;                // --tasks chose some of the present tasks
};

double centered_accuracy(double accuracy, double random_baseline_percent);

// The option with the lowest mean loss; the first one wins ties. Mirrors Python's
// list.index(min(list)), including its handling of NaN (an empty span).
int lowest_mean_loss_choice(const std::vector<double>& mean_losses);

// Mean of loss[span_begin-1 .. span_end-2], summed in float64 in position order (NaN when empty).
double span_mean_loss(const SequenceScores& scores, const CoreSequence& sequence);
// True when argmax equals the next token at every position of the span.
bool span_greedy_match(const SequenceScores& scores, const CoreSequence& sequence);

// Rows shuffled with Random(1337) and cut to max_per_task (0 = all).
std::vector<CoreRow> core_shuffled_rows(std::vector<CoreRow> rows, int64_t max_per_task);

// Evaluates one task on its rows as loaded from the file (the shuffle is done here).
CoreTaskResult evaluate_core_task(const CoreTaskSpec& spec, std::vector<CoreRow> rows, const TextEncoder& encoder,
                                  SequenceScorer& scorer, const CoreOptions& options);

// Evaluates the chosen tasks of a bundle. A task named in options.tasks must exist and have its data.
CoreResult evaluate_core(const CoreBundle& bundle, const TextEncoder& encoder, SequenceScorer& scorer,
                         const CoreOptions& options);

}  // namespace ct
