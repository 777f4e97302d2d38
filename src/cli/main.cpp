// clocktrain: one binary, one subcommand per stage of the flow (see docs/).
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{"clocktrain: pretrain a small language model against a wall-clock budget, and score it"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  ct::cli::add_version_command(app);
  ct::cli::add_tokenizer_command(app);
  ct::cli::add_data_command(app);
  ct::cli::add_train_command(app);
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
    return app.exit(e);
  } catch (const ct::Error& e) {
    std::fprintf(stderr, "clocktrain: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "clocktrain: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
