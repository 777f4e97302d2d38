#include "cli/model_loading.h"

#include <algorithm>

#include "cli/number_options.h"
#include "util/error.h"
#include "util/threads.h"

namespace ct::cli {

void add_backend_options(CLI::App* cmd, BackendArgs& args) {
  cmd->add_option("--backend", args.name, "cpu, cuda, or auto (cuda when available)")->capture_default_str();
  cmd->add_option("--threads", args.threads, "CPU threads (0 = every available core)")
      ->check(thread_count_option())
      ->capture_default_str();
  cmd->add_option("--device", args.device, "CUDA device ordinal")->check(integer_in(0, 1023))->capture_default_str();
  cmd->add_option("--matmul-precision", args.matmul_precision,
                  "f32 (the reference), bf16 (bf16 matmul operands, f32 accumulation; needs a bf16 engine: "
                  "AVX512-BF16, AMX or a GPU) or auto (bf16 where there is one)")
      ->check(CLI::IsMember({"f32", "bf16", "auto"}))
      ->capture_default_str();
}

std::unique_ptr<Backend> make_backend(const BackendArgs& args) {
  set_thread_count(args.threads);
  BackendOptions options;
  options.threads = args.threads;
  options.device = args.device;
  options.matmul_precision = parse_matmul_precision(args.matmul_precision, "--matmul-precision");
  if (args.name != "auto") {
    options.name = args.name;
    return create_backend(options);
  }
  const auto built = available_backends();
  if (std::find(built.begin(), built.end(), "cuda") != built.end()) {
    options.name = "cuda";
    try {
      return create_backend(options);
    } catch (const Error&) {
      // no usable device: fall back to the CPU
    }
  }
  options.name = "cpu";
  return create_backend(options);
}

}  // namespace ct::cli
