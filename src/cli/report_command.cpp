#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "harness/report.h"

namespace ct::cli {

void add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("report", "(Re)build report.html of a run folder from its metrics.jsonl and result.json");
  struct Options {
    std::string run_dir;
    std::string out;
  };
  auto opts = std::make_shared<Options>();
  cmd->add_option("run_dir", opts->run_dir, "The run folder")->required();
  cmd->add_option("--out", opts->out, "Where to write the page (default RUN_DIR/report.html)");
  cmd->callback([opts] {
    auto written = write_run_report(opts->run_dir, opts->out);
    std::printf("%s\n", written.string().c_str());
  });
}

}  // namespace ct::cli
