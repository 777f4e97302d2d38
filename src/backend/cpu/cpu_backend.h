#pragma once
// The CPU backend: the reference implementation of backend.h, multithreaded with OpenMP.
#include <memory>

#include "backend/backend.h"

namespace ct {

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);

}  // namespace ct
