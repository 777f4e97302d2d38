#pragma once
// Running a child command for the lab: `clocktrain run` for lab run (output straight to the
// terminal, so the trainer's progress line works), or a check command for lab check (output shown
// and its tail kept for the ledger).
#include <filesystem>
#include <string>
#include <vector>

namespace ct::lab {

struct ChildResult {
  int exit_code = 0;        // 128 + signal number when killed by a signal; 127 when it could not start
  std::string output_tail;  // the last bytes of stdout+stderr when captured
  double started_unix = 0, finished_unix = 0;
};

// Runs argv (argv[0] searched on PATH when it has no '/'), waiting for it. With `capture_tail_bytes`
// > 0 the child's stdout and stderr go through a pipe: echoed to our stdout, last bytes kept.
ChildResult run_child(const std::vector<std::string>& argv, size_t capture_tail_bytes);

// The command line as one shell-quoted string, for the ledger and messages.
std::string shell_join(const std::vector<std::string>& argv);

// The path of the running executable (/proc/self/exe).
std::filesystem::path current_executable();

}  // namespace ct::lab
