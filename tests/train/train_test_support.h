#pragma once
// A small prepared data folder for the trainer tests: a hand-made corpus of simple, repetitive English
// sentences (so that a tiny model's loss visibly falls), tokenized by prepare_data with the data
// tests' byte-level tokenizer (257 ids), which is saved beside the shards as `data prepare` does, and
// recipes/tiny.toml resized to that vocabulary.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "data/data_test_support.h"
#include "data/prepare.h"
#include "data/text_encoder.h"
#include "train/recipe.h"
#include "train/trainer.h"
#include "util/json.h"

extern char** environ;

namespace ct::test {

// The error parse_recipe gives for `toml` (read as bad.toml), or "" when it parses.
inline std::string recipe_error(const std::string& toml) {
  return error_of([&] { parse_recipe(toml, "bad.toml"); });
}

inline fs::path make_test_data(const fs::path& root) {
  const std::vector<std::string> subjects = {"the cat", "a dog", "my friend", "the old man", "her sister", "the bird"};
  const std::vector<std::string> verbs = {"sees", "likes", "finds", "follows", "calls", "meets"};
  const std::vector<std::string> objects = {"the river", "a small house", "the garden", "an apple", "the ship", "a red door"};
  std::vector<std::pair<std::string, std::string>> docs;
  for (int d = 0; d < 240; ++d) {
    std::string text;
    for (int s = 0; s < 6; ++s) {
      const size_t k = static_cast<size_t>(d * 7 + s * 13);
      text += subjects[k % subjects.size()] + " " + verbs[(k / 3) % verbs.size()] + " " + objects[(k / 5) % objects.size()] + ". ";
    }
    docs.emplace_back("doc" + std::to_string(d), text);
  }
  write_jsonl(root / "raw" / "corpus" / "train_000.jsonl", docs);
  PrepareSettings settings;
  settings.data_dir = root / "raw";
  settings.out_dir = root / "data";
  settings.shard_tokens = 20000;
  settings.heldout_tokens = 4000;
  settings.threads = 2;
  settings.progress = false;
  const Tokenizer tokenizer = byte_tokenizer();
  prepare_data(settings, *tokenizer_encoder(tokenizer));
  tokenizer.save(root / "data" / "tokenizer");
  return root / "data";
}

// The trainer as a child process: argv, extra environment variables, an optional file size limit
// (RLIMIT_FSIZE, bytes); stdout and stderr go to `log`.
inline pid_t spawn(const std::vector<std::string>& args, const fs::path& log, const std::vector<std::string>& extra_env = {},
            rlim_t file_size_limit = 0) {
  std::vector<std::string> env_strings(extra_env);
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_strings(args);
  for (std::string& s : arg_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls from here to exec
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (file_size_limit > 0) {
      const rlimit limit{file_size_limit, file_size_limit};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

inline int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

inline std::string describe(int status) {
  if (WIFEXITED(status)) return str("exit ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return str("signal ", WTERMSIG(status));
  return "?";
}

// The text of recipes/tiny.toml with the byte-level vocabulary of make_test_data (vocab_size 257), for
// tests that run the clocktrain binary on a recipe file.
inline std::string tiny_toml_byte_vocab() {
  std::string text = read_file(source_dir() / "recipes" / "tiny.toml");
  const std::string from = "vocab_size = 8192";
  text.replace(text.find(from), from.size(), "vocab_size = 257");
  return text;
}

// recipes/tiny.toml with the byte-level vocabulary of make_test_data.
// A scratch folder holding the test data (make_test_data) and tiny.toml on its byte vocabulary
// (tiny_toml_byte_vocab): where the tests of the `clocktrain train` command start.
struct TinyTrainFolder {
  explicit TinyTrainFolder(const fs::path& dir) : data(make_test_data(dir)), recipe(dir / "tiny.toml") {
    write_file_atomic(recipe, tiny_toml_byte_vocab());
  }
  // `clocktrain train tiny.toml --data DATA --threads 1 OPTIONS`
  std::string train(const std::string& options) const {
    return clocktrain_bin() + " train " + recipe.string() + " --data " + data.string() + " --threads 1 " + options;
  }
  fs::path data, recipe;
};

inline Recipe tiny_recipe() {
  Recipe r = load_recipe(source_dir() / "recipes" / "tiny.toml");
  r.model.vocab_size = 257;
  r.threads = 1;  // a loaded 2-core machine makes multi-threaded tiny steps slow; determinism tests set 2
  return r;
}

inline std::vector<Json> read_metrics(const fs::path& run_dir) {
  std::vector<Json> rows;
  std::istringstream in(read_file(run_dir / "metrics.jsonl"));
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(Json::parse(line));
  return rows;
}

inline std::vector<Json> rows_of_kind(const std::vector<Json>& rows, const std::string& kind) {
  std::vector<Json> out;
  for (const Json& r : rows)
    if (r["kind"] == kind) out.push_back(r);
  return out;
}

// The trainer tests' fixture: one prepared data folder (make_test_data) for the whole suite, since
// preparing it takes a moment, and a scratch folder per test for the runs.
class TrainerFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new TempDir();
    data_ = make_test_data(root_->path());
  }
  static void TearDownTestSuite() {
    delete root_;
    root_ = nullptr;
  }
  TrainOptions options(const std::string& run, const Recipe& recipe) {
    TrainOptions o;
    o.recipe = recipe;
    o.data_dir = data_;
    o.out_dir = scratch_.path() / run;
    o.progress_line = false;
    return o;
  }
  // The train loss of every step of a run in the scratch folder.
  std::vector<double> losses(const std::string& run) {
    std::vector<double> out;
    for (const Json& r : rows_of_kind(read_metrics(scratch_.path() / run), "train"))
      out.push_back(r["loss"].get<double>());
    return out;
  }
  static inline TempDir* root_ = nullptr;
  static inline fs::path data_;
  TempDir scratch_;
};

}  // namespace ct::test
