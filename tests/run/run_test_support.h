#pragma once
// `clocktrain run` end to end on a small data folder made in the test: a corpus of varied English
// sentences (enough for a tokenizer of 320 tokens), a few validation documents, and optionally the
// small CORE bundle of tests/data/core_small. Each run takes a few seconds with a toy recipe.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "data/data_test_support.h"
#include "harness/result.h"
#include "test_support.h"
#include "util/files.h"

namespace ct::test {

inline std::string sentence_text(int d, int sentences) {
  static const std::vector<std::string> subjects = {"the cat", "a dog", "my friend", "the old man", "her sister",
                                                    "the bird", "our teacher", "a young girl", "the farmer", "his uncle"};
  static const std::vector<std::string> verbs = {"sees", "likes", "finds", "follows", "calls", "meets", "paints",
                                                 "remembers", "watches", "carries"};
  static const std::vector<std::string> objects = {"the river", "a small house", "the garden", "an apple", "the ship",
                                                   "a red door", "the mountain", "a quiet street", "the window",
                                                   "a wooden box"};
  std::string text;
  for (int s = 0; s < sentences; ++s) {
    const size_t k = static_cast<size_t>(d * 7 + s * 13);
    text += subjects[k % subjects.size()] + " " + verbs[(k / 3) % verbs.size()] + " " +
            objects[(k / 7) % objects.size()] + (s % 3 == 2 ? " in the evening. " : ". ");
  }
  return text;
}

// DATA/corpus/train_000.jsonl, DATA/val/val_000.jsonl and (with_core) DATA/eval_bundle.
inline fs::path make_run_data(const fs::path& root, bool with_core = false) {
  std::vector<std::pair<std::string, std::string>> corpus, val;
  for (int d = 0; d < 240; ++d) corpus.emplace_back("doc" + std::to_string(d), sentence_text(d, 8));
  for (int d = 0; d < 8; ++d) val.emplace_back("val" + std::to_string(d), sentence_text(1000 + d, 6));
  const fs::path data = root / "data";
  write_jsonl(data / "corpus" / "train_000.jsonl", corpus);
  write_jsonl(data / "val" / "val_000.jsonl", val);
  if (with_core) fs::copy(source_dir() / "tests" / "data" / "core_small", data / "eval_bundle", fs::copy_options::recursive);
  return data;
}

// A toy recipe (recipes/tiny.toml's shape at a vocabulary of 320), with `extra` TOML appended to
// its [run] table (e.g. "budget_seconds = 0.001").
inline fs::path write_run_recipe(const fs::path& path, const std::string& run_extra = "",
                                 const std::string& tables = "") {
  write_file_atomic(path, "name = \"toy\"\n"
                          "[model]\nvocab_size = 320\nsequence_len = 64\nn_layer = 2\nn_embd = 64\nn_head = 2\n"
                          "n_kv_head = 1\nattention_layers = [true, false]\n"
                          "[batch]\ntokens_per_step = 1024\nmicro_batch_rows = 8\n"
                          "[run]\nrun_by = \"steps\"\nsteps = 12\nstartup_steps = 2\n" +
                              run_extra +
                              "\n[eval]\nevery_steps = 6\nevery_seconds = 0.0\ntokens = 512\n"
                              "[checkpoint]\nevery_minutes = 0.0\n" +
                              tables);
  return path;
}

// `clocktrain run RECIPE --data DATA --cache CACHE --out OUT` with small preparation settings, on every
// CPU of the machine, as the gate's full_machine check requires (a run narrowed by taskset fails it).
// Its OpenMP threads sleep when they wait (OMP_WAIT_POLICY=passive): a toy model's steps on a machine
// shared with other tests would otherwise spend most of their time spinning against each other.
// `env`: "NAME=VALUE ..." for the run's environment.
inline CommandResult clocktrain_run(const fs::path& recipe, const fs::path& data, const fs::path& cache,
                                    const fs::path& out, const std::string& more = "", const std::string& env = "") {
  return run_command("env OMP_WAIT_POLICY=passive " + env + " " + clocktrain_bin() + " run " + recipe.string() + " --data " + data.string() + " --cache " + cache.string() + " --out " +
                     out.string() + " --shard-tokens 20000 --heldout-tokens 2000 --no-progress " + more);
}

inline const GateCheck& check_named(const RunResult& r, const std::string& name) {
  const GateCheck* c = r.gate.find(name);
  if (!c) throw std::runtime_error("no gate check " + name);
  return *c;
}

}  // namespace ct::test
