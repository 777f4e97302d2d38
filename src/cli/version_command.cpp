#include <cstdio>

#include "backend/cpu/cpu_level.h"
#include "cli/commands.h"
#include "clocktrain_version.h"
#include "util/cpu_info.h"
#include "util/error.h"

namespace ct::cli {

// The version, what the binary was compiled for, and the CPU level this machine gives it: a build for
// one CPU (-march=native) may not run on another, and the level decides the kernels (docs/cpu.md).
// `clocktrain --version` prints the first line alone, as other tools' --version do.
void add_version_command(CLI::App& app) {
  app.set_version_flag("--version", str("clocktrain ", kVersion), "Print the version (the first line of `version`)");
  auto* cmd = app.add_subcommand("version", "Print the version, the build flags and the CPU level in use");
  cmd->callback([] {
    const CpuInfo& cpu = cpu_info();
    std::printf("clocktrain %s\nbuild: %s\ncpu: %s (family %d, model %d), level %s; %s\n", kVersion, kBuildFlags,
                cpu.model_name.c_str(), cpu.family, cpu.model, cpu_level_description().c_str(),
                cpu.flag_summary().c_str());
  });
}

}  // namespace ct::cli
