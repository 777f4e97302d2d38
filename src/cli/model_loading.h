#pragma once
// Shared by the commands that run a saved checkpoint (eval, sample): the backend options on the
// command line and creating the backend.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ct::cli {

struct BackendArgs {
  std::string name = "auto";  // auto = cuda when built in and a device starts, else cpu
  int threads = 0;
  int device = 0;
  std::string matmul_precision = "f32";  // f32 (the reference), bf16 (bf16 operands, f32 accumulation) or auto
};

void add_backend_options(CLI::App* cmd, BackendArgs& args);
std::unique_ptr<Backend> make_backend(const BackendArgs& args);

}  // namespace ct::cli
