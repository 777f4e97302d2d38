#include "lab/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/clock.h"
#include "util/error.h"

namespace ct::lab {

namespace {

[[noreturn]] void exec_or_exit(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "clocktrain lab: cannot run %s: %s\n", argv[0].c_str(), std::strerror(errno));
  ::_exit(127);
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("waiting for the child process: ", std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, size_t capture_tail_bytes) {
  check(!argv.empty(), "no command to run");
  ChildResult result;
  result.started_unix = unix_seconds();
  std::fflush(stdout);
  std::fflush(stderr);
  int pipe_fds[2] = {-1, -1};
  if (capture_tail_bytes > 0)
    check(::pipe(pipe_fds) == 0, "cannot create a pipe for ", argv[0], ": ", std::strerror(errno));
  // As system(3) does: while the child runs, Ctrl-C and Ctrl-\ reach the child (same process group)
  // but not the lab, which stays to record what the child leaves behind.
  struct sigaction ignore {}, old_interrupt {}, old_quit {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGINT, &ignore, &old_interrupt);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::sigaction(SIGINT, &old_interrupt, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    fail("cannot start ", argv[0], ": fork: ", std::strerror(errno));
  }
  if (pid == 0) {
    ::sigaction(SIGINT, &old_interrupt, nullptr);
    ::sigaction(SIGQUIT, &old_quit, nullptr);
    if (capture_tail_bytes > 0) {
      ::dup2(pipe_fds[1], STDOUT_FILENO);
      ::dup2(pipe_fds[1], STDERR_FILENO);
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
    }
    exec_or_exit(argv);
  }
  if (capture_tail_bytes > 0) {
    ::close(pipe_fds[1]);
    char buffer[4096];
    while (true) {
      ssize_t n = ::read(pipe_fds[0], buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::fwrite(buffer, 1, static_cast<size_t>(n), stdout);
      result.output_tail.append(buffer, static_cast<size_t>(n));
      if (result.output_tail.size() > 2 * capture_tail_bytes)
        result.output_tail.erase(0, result.output_tail.size() - capture_tail_bytes);
    }
    std::fflush(stdout);
    ::close(pipe_fds[0]);
    if (result.output_tail.size() > capture_tail_bytes)
      result.output_tail.erase(0, result.output_tail.size() - capture_tail_bytes);
  }
  result.exit_code = wait_for(pid);
  ::sigaction(SIGINT, &old_interrupt, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  result.finished_unix = unix_seconds();
  return result;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                   "_-./=:,+@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) {
      if (c == '\'') out += "'\\''";
      else out += c;
    }
    out += '\'';
  }
  return out;
}

std::filesystem::path current_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  check(!ec, "cannot find the running executable (/proc/self/exe): ", ec.message());
  return path;
}

}  // namespace ct::lab
