// clocktrain: one binary, one subcommand per stage of the flow (see docs/).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

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

// Optimal string alignment distance: edits, where swapping two neighbouring letters ("trian") is one.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// CLI11 answers a mistyped command with "A subcommand is required" (or that the argument was not
// expected), not naming it. Where a command group takes only flags and requires a subcommand, its first
// argument that is not a flag must name one of its subcommands: one that does not is refused here, with
// the closest name. Returns the message, or "" when every command is known.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  const CLI::App* group = &app;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return "";
    if (!word.empty() && word[0] == '-') continue;
    if (group->get_require_subcommand_min() == 0) return "";
    for (const CLI::Option* option : group->get_options())
      if (option->get_items_expected_max() > 0) return "";  // the word may be an option's value
    const auto subcommands = group->get_subcommands([](const CLI::App*) { return true; });
    const auto known = std::find_if(subcommands.begin(), subcommands.end(),
                                    [&](const CLI::App* sub) { return sub->check_name(word); });
    if (known != subcommands.end()) {
      path += word + " ";
      group = *known;
      continue;
    }
    std::string closest, names;
    size_t best = std::string::npos;
    for (const CLI::App* candidate : subcommands) {
      const std::string& name = candidate->get_name();
      names += (names.empty() ? "" : ", ") + name;
      const size_t distance = edit_distance(word, name);
      if (distance < best) best = distance, closest = name;
    }
    // A name within a third of its letters (at least 1, at most 2 edits) is a likely typo of it.
    const size_t allowed = std::clamp<size_t>(closest.size() / 3, 1, 2);
    return ct::str("unknown command '", path, word, "'; ",
                   best <= allowed ? ct::str("did you mean '", path, closest, "'?")
                                   : ct::str("the commands are: ", names));
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // A file size limit (ulimit -f) then makes write() fail with EFBIG, which every writer reports as an
  // error naming the file, instead of killing the process with a core dump mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  // Usage lines name the program as the user would type it, not the binary's path; the command that
  // continues a stopped run (train) needs the path as invoked, to start this same binary.
  const std::string invoked_as = argc > 0 ? argv[0] : "clocktrain";
  CLI::App app{"clocktrain: pretrain a small language model against a wall-clock budget, and score it",
               std::filesystem::path(invoked_as).filename().string()};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  ct::cli::add_version_command(app);
  ct::cli::add_tokenizer_command(app);
  ct::cli::add_data_command(app);
  ct::cli::add_train_command(app, invoked_as);
  ct::cli::add_run_command(app);
  ct::cli::add_eval_command(app);
  ct::cli::add_sample_command(app);
  ct::cli::add_board_command(app);
  ct::cli::add_report_command(app);
  ct::cli::add_lab_command(app);
  ct::cli::add_plan_command(app);
  if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "%s: error: %s\n", app.get_name().c_str(), unknown.c_str());
    return 1;
  }
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
