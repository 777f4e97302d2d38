// clocktrain eval bpb | core  (docs/eval.md)
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "cli/model_loading.h"
#include "eval/checkpoint_eval.h"
#include "eval/core_report.h"
#include "util/clock.h"
#include "util/data_dir.h"
#include "util/error.h"
#include "util/files.h"
#include "util/progress.h"

namespace ct::cli {

namespace {

struct BpbArgs {
  std::string checkpoint, data, out;
  int64_t tokens = 0;
  int64_t batch_tokens = 16384;
  bool json = false;
  bool no_progress = false;
  bool per_document = false;
  BackendArgs backend;
};

void run_bpb(const BpbArgs& args) {
  check_out_file_writable("--out", args.out);  // before minutes of evaluation, not after
  const DataLayout layout{resolve_data_dir(args.data)};
  auto backend = make_backend(args.backend);
  // The evaluator reads the checkpoint and the pinned validation documents, nothing else.
  ReadGuard guard;
  allow_evaluator_reads(guard, {args.checkpoint, layout.val()});
  EvalCheckpoint checkpoint = load_eval_checkpoint(*backend, args.checkpoint, &guard);
  ProgressLine progress;
  BpbOptions options;
  options.max_target_tokens = args.tokens;
  // On a terminal, a status line; otherwise (under `clocktrain run`, in a log) a line per tenth, but
  // for --json, whose output is the JSON alone.
  const Stopwatch watch;
  int64_t tenths_printed = 0;
  options.progress = [&](int64_t done, int64_t total) {
    if (args.no_progress) return;
    if (progress.enabled()) {
      progress.update(str("val_bpb: ", done, "/", total, " tokens"), done == total);
      return;
    }
    const int64_t tenths = total > 0 ? 10 * done / total : 10;
    if (!args.json && tenths > tenths_printed && done < total) {
      tenths_printed = tenths;
      std::fprintf(stderr, "val_bpb: %lld%% (%lld of %lld targets, %.0f s)\n", static_cast<long long>(10 * tenths),
                   static_cast<long long>(done), static_cast<long long>(total), watch.seconds());
    }
  };
  BpbResult result = evaluate_checkpoint_bpb(checkpoint, layout.val(), options, args.batch_tokens, &guard);
  progress.finish();
  // The forward pass's FLOP at the training step's count (ModelConfig::flops_per_token is forward +
  // backward, three forward passes' worth), so the two rates compare.
  const double flops_per_second =
      result.seconds > 0 ? static_cast<double>(result.targets) * checkpoint.model->config().flops_per_token() / 3.0 /
                               result.seconds
                         : 0.0;
  OrderedJson j = bpb_result_json(result);
  j["checkpoint"] = args.checkpoint;
  j["checkpoint_sha256"] = checkpoint.weights_sha256;
  j["files_read"] = guard.opened();
  j["backend"] = backend->device_description();
  j["model_flops_per_second"] = flops_per_second;
  if (!args.out.empty()) write_file_atomic(args.out, j.dump(2) + "\n");
  if (args.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("val_bpb %.6f  (%lld targets, %lld bytes, %lld rows of %lld, %.1f s, %.1f model GFLOP/s, on %s)\n",
                result.bpb, static_cast<long long>(result.targets), static_cast<long long>(result.bytes),
                static_cast<long long>(result.rows), static_cast<long long>(result.sequence_len), result.seconds,
                flops_per_second / 1e9, backend->device_description().c_str());
    if (args.per_document) {
      std::printf("%9s %10s %7s  %s\n", "val_bpb", "bytes", "share", "document");
      for (const BpbPart& part : result.documents)
        std::printf("%9.4f %10lld %6.1f%%  %s\n", part.bpb(), static_cast<long long>(part.bytes),
                    100.0 * part.nats / result.nats, part.name.c_str());
    }
  }
}

struct CoreArgs {
  std::string checkpoint, data, bundle, tasks, out, dump_prompts;
  int64_t max_per_task = 0;
  int64_t batch_tokens = 16384;
  bool json = false;
  bool no_progress = false;
  bool no_prefix_reuse = false;
  BackendArgs backend;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void run_core(const CoreArgs& args) {
  check_out_file_writable("--out", args.out);  // before minutes of evaluation, not after
  check_out_file_writable("--dump-prompts", args.dump_prompts);
  const std::filesystem::path bundle =
      args.bundle.empty() ? DataLayout{resolve_data_dir(args.data)}.eval_bundle() : std::filesystem::path(args.bundle);
  auto backend = make_backend(args.backend);
  // The evaluator reads the checkpoint and the CORE bundle, nothing else.
  ReadGuard guard;
  allow_evaluator_reads(guard, {args.checkpoint, bundle});
  EvalCheckpoint checkpoint = load_eval_checkpoint(*backend, args.checkpoint, &guard);
  CoreOptions options;
  options.read_guard = &guard;
  options.max_per_task = args.max_per_task;
  options.tasks = split_commas(args.tasks);
  options.batch_tokens = args.batch_tokens;
  options.reuse_prefixes = !args.no_prefix_reuse;
  options.keep_rows = !args.dump_prompts.empty();
  ProgressLine progress;
  options.progress = [&](const std::string& label, int64_t done, int64_t total) {
    if (!args.no_progress) progress.update(str("CORE: ", label, " ", done, "/", total));
  };
  CoreResult result = evaluate_checkpoint_core(checkpoint, bundle, options);
  progress.finish();
  OrderedJson j = core_result_json(result);
  j["checkpoint"] = args.checkpoint;
  j["checkpoint_sha256"] = checkpoint.weights_sha256;
  j["files_read"] = guard.opened();
  j["backend"] = backend->device_description();
  if (!args.out.empty()) write_file_atomic(args.out, j.dump(2) + "\n");
  if (!args.dump_prompts.empty()) write_file_atomic(args.dump_prompts, core_rows_json(result).dump() + "\n");
  if (args.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", core_result_table(result).c_str());
  }
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto* eval = app.add_subcommand("eval", "Score a saved checkpoint: val_bpb or CORE (docs/eval.md)");
  eval->require_subcommand(1);

  static BpbArgs bpb;
  auto* b = eval->add_subcommand("bpb", "Bits per byte on the pinned validation documents (DATA/val)");
  b->add_option("checkpoint", bpb.checkpoint, "Checkpoint folder (config.json, model.safetensors, tokenizer)")
      ->required();
  b->add_option("--tokens", bpb.tokens, "Evaluate only the first N target tokens (0 = the whole set)")
      ->check(integer_in(0))
      ->capture_default_str();
  b->add_option("--batch-tokens", bpb.batch_tokens, "Tokens per forward pass")
      ->check(integer_in(1))
      ->capture_default_str();
  b->add_option("--data", bpb.data, "Data folder (default: $CLOCKTRAIN_DATA or ../shared/data)");
  b->add_option("--out", bpb.out, "Also write the result as JSON to this file");
  b->add_flag("--json", bpb.json, "Print JSON instead of a line of text");
  b->add_flag("--no-progress", bpb.no_progress,
              "No progress: neither the status line (on a terminal) nor a line per tenth (otherwise)");
  b->add_flag("--per-document", bpb.per_document,
              "Also print each document's val_bpb, bytes and share of the nats (the JSON always has them)");
  add_backend_options(b, bpb.backend);
  b->callback([] { run_bpb(bpb); });

  static CoreArgs core;
  auto* c = eval->add_subcommand("core", "The CORE in-context-learning metric (DATA/eval_bundle)");
  c->add_option("checkpoint", core.checkpoint, "Checkpoint folder (config.json, model.safetensors, tokenizer)")
      ->required();
  c->add_option("--bundle", core.bundle, "CORE bundle folder (default: DATA/eval_bundle)");
  c->add_option("--data", core.data, "Data folder (default: $CLOCKTRAIN_DATA or ../shared/data)");
  c->add_option("--max-per-task", core.max_per_task, "Keep the first N shuffled rows of each task (0 = all)")
      ->check(integer_in(0))
      ->capture_default_str();
  c->add_option("--tasks", core.tasks, "Only these task labels, comma separated");
  c->add_option("--batch-tokens", core.batch_tokens, "Tokens per forward pass")
      ->check(integer_in(1))
      ->capture_default_str();
  c->add_option("--out", core.out, "Also write the result as JSON to this file");
  c->add_option("--dump-prompts", core.dump_prompts,
                "Write every row's prompts, tokens, spans, losses and verdict as JSON to this file");
  c->add_flag("--json", core.json, "Print JSON instead of the table");
  c->add_flag("--no-progress", core.no_progress, "No status line on a terminal");
  c->add_flag("--no-prefix-reuse", core.no_prefix_reuse,
              "Score every sequence in full (the plain path: same results, slower; for checks and benchmarks)");
  add_backend_options(c, core.backend);
  c->callback([] { run_core(core); });
}

}  // namespace ct::cli
