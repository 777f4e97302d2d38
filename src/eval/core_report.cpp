#include "eval/core_report.h"

#include <cmath>
#include <cstdio>

namespace ct {

namespace {

OrderedJson task_summary_json(const CoreTaskResult& t) {
  OrderedJson j;
  j["label"] = t.label;
  j["shots"] = t.num_fewshot;
  j["type"] = core_task_type_name(t.type);
  j["rows"] = t.rows;
  j["correct"] = t.correct;
  j["accuracy"] = t.accuracy;
  j["centered"] = t.centered;
  j["random_baseline_percent"] = t.random_baseline_percent;
  j["seconds"] = t.seconds;
  j["truncated_rows"] = t.truncated_rows;
  j["clamped_rows"] = t.clamped_rows;
  j["prefix_mismatch_rows"] = t.prefix_mismatch_rows;
  return j;
}

}  // namespace

OrderedJson core_result_json(const CoreResult& result) {
  OrderedJson j;
  j["metric"] = result.metric_name;
  j["core"] = result.core;
  j["tasks_evaluated"] = result.tasks.size();
  j["missing_tasks"] = result.missing_tasks;
  j["max_per_task"] = result.max_per_task;
  j["task_subset"] = result.task_subset;
  j["tasks"] = OrderedJson::array();
  for (const auto& t : result.tasks) j["tasks"].push_back(task_summary_json(t));
  return j;
}

std::string core_result_table(const CoreResult& result) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "%-34s %5s %-17s %6s %9s %9s %8s\n", "task", "shots", "type", "rows", "accuracy",
                "centered", "seconds");
  out += line;
  int64_t truncated = 0, clamped = 0, mismatched = 0;
  for (const auto& t : result.tasks) {
    std::snprintf(line, sizeof(line), "%-34s %5d %-17s %6lld %9.4f %9.4f %8.1f\n", t.label.c_str(), t.num_fewshot,
                  core_task_type_name(t.type), static_cast<long long>(t.rows), t.accuracy, t.centered, t.seconds);
    out += line;
    truncated += t.truncated_rows;
    clamped += t.clamped_rows;
    mismatched += t.prefix_mismatch_rows;
  }
  std::snprintf(line, sizeof(line), "%s: %.4f (mean centered accuracy over %zu tasks)\n", result.metric_name.c_str(),
                result.core, result.tasks.size());
  out += line;
  if (!result.missing_tasks.empty()) {
    out += "missing (data file absent):";
    for (const auto& m : result.missing_tasks) out += " " + m;
    out += "\n";
  }
  if (result.max_per_task > 0 || result.task_subset)
    out += "note: a subset (--max-per-task or --tasks): not comparable with a full CORE score\n";
  if (truncated || clamped || mismatched) {
    std::snprintf(line, sizeof(line),
                  "rows truncated to the context: %lld, spans clamped: %lld, language-modeling prefix mismatches: %lld\n",
                  static_cast<long long>(truncated), static_cast<long long>(clamped),
                  static_cast<long long>(mismatched));
    out += line;
  }
  return out;
}

OrderedJson core_rows_json(const CoreResult& result) {
  OrderedJson j = core_result_json(result);
  for (size_t ti = 0; ti < result.tasks.size(); ++ti) {
    const auto& t = result.tasks[ti];
    OrderedJson rows = OrderedJson::array();
    for (const auto& r : t.row_records) {
      OrderedJson row;
      row["idx"] = r.idx;
      row["line"] = r.line;
      row["fewshot"] = r.fewshot;
      row["prompts"] = r.prompts;
      row["prefix_mismatch"] = r.question.prefix_mismatch;
      row["truncated"] = r.question.truncated;
      row["clamped"] = r.question.clamped;
      OrderedJson seqs = OrderedJson::array();
      for (const auto& s : r.question.sequences) {
        OrderedJson sj;
        sj["tokens"] = s.tokens;
        sj["span"] = {s.span_begin, s.span_end};
        seqs.push_back(sj);
      }
      row["sequences"] = seqs;
      OrderedJson means = OrderedJson::array();
      for (double m : r.mean_losses) means.push_back(std::isnan(m) ? OrderedJson() : OrderedJson(m));
      row["mean_losses"] = means;
      row["pred"] = r.pred;
      row["correct"] = r.correct;
      rows.push_back(row);
    }
    j["tasks"][ti]["row_records"] = rows;
  }
  return j;
}

}  // namespace ct
