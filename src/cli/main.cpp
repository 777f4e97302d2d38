// clocktrain: one binary, one subcommand per stage of the flow (see docs/).
#include <csignal>
#include <cstdio>
#include <exception>

#include "backend/parallel/process_group.h"
#include "cli/commands.h"
#include "util/error.h"

namespace {

// A data-parallel process that fails ends the whole job (ProcessGroup::abort): the others would otherwise
// wait in their next collective for a process that is gone.
void stop_other_processes(int exit_code) {
  ct::ProcessGroup* group = ct::ProcessGroup::world_if_started();
  if (group && group->size() > 1) {
    std::fprintf(stderr, "clocktrain: rank %d of %d failed: stopping every process of the job\n", group->rank(),
                 group->size());
    std::fflush(stderr);
    group->abort(exit_code);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A file size limit (ulimit -f) then makes write() fail with EFBIG, which every writer reports as an
  // error naming the file, instead of killing the process with a core dump mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"clocktrain: pretrain a small language model against a wall-clock budget, and score it"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  ct::cli::add_version_command(app);
  ct::cli::add_tokenizer_command(app);
  ct::cli::add_data_command(app);
  ct::cli::add_train_command(app);
  ct::cli::add_run_command(app);
  ct::cli::add_eval_command(app);
  ct::cli::add_sample_command(app);
  ct::cli::add_board_command(app);
  ct::cli::add_report_command(app);
  ct::cli::add_lab_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    // A subcommand that finished its work but reports failure through its exit status.
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help); a refused option is exit status 1, like every other
    // refusal (docs/run.md), not CLI11's own codes (104-109).
    return app.exit(e) == 0 ? 0 : 1;
  } catch (const ct::Error& e) {
    std::fprintf(stderr, "clocktrain: error: %s\n", e.what());
    stop_other_processes(1);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clocktrain: internal error: %s\n", e.what());
    stop_other_processes(2);
    return 2;
  }
  return 0;
}
