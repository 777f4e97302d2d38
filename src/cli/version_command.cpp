#include <cstdio>

#include "cli/commands.h"
#include "clocktrain_version.h"

namespace ct::cli {

void add_version_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print the version and build flags");
  cmd->callback([] { std::printf("clocktrain %s\nbuild: %s\n", kVersion, kBuildFlags); });
}

}  // namespace ct::cli
