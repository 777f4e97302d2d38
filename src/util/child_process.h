#pragma once
// Running a child command: `clocktrain run` under `lab run` (output straight to the terminal, so the
// trainer's progress line works), a check command for `lab check` (output shown and its tail kept),
// and the trusted evaluator under `clocktrain run` (a separate process, so the trainer's process
// state cannot influence the score; CORE under a timeout in round 2).
#include <filesystem>
#include <string>
#include <vector>

namespace ct {

struct ChildResult {
  int exit_code = 0;        // 128 + signal number when killed by a signal; 127 when it could not start
  bool timed_out = false;   // killed (SIGKILL) because it ran past the timeout
  std::string output_tail;  // the last bytes of stdout+stderr when captured
  double started_unix = 0, finished_unix = 0;
};

// Runs argv (argv[0] searched on PATH when it has no '/'), waiting for it. With `capture_tail_bytes`
// > 0 the child's stdout and stderr go through a pipe: echoed to our stdout, last bytes kept. With
// `timeout_seconds` > 0 the child is killed once it has run that long (timed_out set, exit code
// 128 + SIGKILL).
ChildResult run_child(const std::vector<std::string>& argv, size_t capture_tail_bytes, double timeout_seconds = 0);

// The command line as one shell-quoted string, for the ledger and messages.
std::string shell_join(const std::vector<std::string>& argv);

// The path of the running executable (/proc/self/exe).
std::filesystem::path current_executable();

}  // namespace ct
