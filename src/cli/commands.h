#pragma once
// Each subcommand lives in its own file and registers itself on the top-level app here.
#include <CLI/CLI.hpp>

#include <string>

namespace ct::cli {

void add_version_command(CLI::App& app);
void add_tokenizer_command(CLI::App& app);
void add_data_command(CLI::App& app);
// invoked_as: argv[0], the binary that the command continuing a stopped run starts.
void add_train_command(CLI::App& app, const std::string& invoked_as);
void add_run_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_board_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_lab_command(CLI::App& app);
void add_plan_command(CLI::App& app);

}  // namespace ct::cli
