// The defaults of Backend's optional capabilities (backend.h): value slots computed at once,
// one-process data parallelism.
#include "backend/backend.h"

#include "util/error.h"

namespace ct {

const char* matmul_precision_name(MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::automatic: return "auto";
    case MatmulPrecision::f32: return "f32";
    case MatmulPrecision::bf16: return "bf16";
  }
  return "?";
}

MatmulPrecision parse_matmul_precision(const std::string& text, const std::string& where) {
  for (MatmulPrecision p : {MatmulPrecision::automatic, MatmulPrecision::f32, MatmulPrecision::bf16})
    if (text == matmul_precision_name(p)) return p;
  fail(where, ": expected \"auto\", \"f32\" or \"bf16\", got \"", text, "\"");
}

namespace {
void check_slot(const char* op, int slot) {
  check(slot >= 0 && slot < Backend::kValueSlots, op, ": slot ", slot, " is outside [0, ", Backend::kValueSlots, ")");
}
}  // namespace

void Backend::sum_to_slot(int slot, const Tensor& x, bool accumulate) {
  check_slot("sum_to_slot", slot);
  if (default_value_slots_.empty()) default_value_slots_.assign(kValueSlots, 0.0);
  double value = sum(x);
  double& s = default_value_slots_[static_cast<size_t>(slot)];
  s = accumulate ? s + value : value;
}

void Backend::sum_squares_to_slot(int slot, const Tensor& x, bool accumulate) {
  check_slot("sum_squares_to_slot", slot);
  if (default_value_slots_.empty()) default_value_slots_.assign(kValueSlots, 0.0);
  double value = sum_squares(x);
  double& s = default_value_slots_[static_cast<size_t>(slot)];
  s = accumulate ? s + value : value;
}

std::vector<double> Backend::read_value_slots(int count) {
  check(count >= 0 && count <= kValueSlots, "read_value_slots: count ", count, " is outside [0, ", kValueSlots, "]");
  synchronize();
  if (default_value_slots_.empty()) default_value_slots_.assign(kValueSlots, 0.0);
  return {default_value_slots_.begin(), default_value_slots_.begin() + count};
}

void Backend::newton_schulz_many(const std::vector<Tensor>& x_outs, const std::vector<Tensor>& gs, int steps,
                                 double a, double b, double c) {
  check(x_outs.size() == gs.size(), "newton_schulz_many: ", x_outs.size(), " outputs but ", gs.size(), " inputs");
  for (size_t i = 0; i < gs.size(); ++i) newton_schulz(x_outs[i], gs[i], steps, a, b, c);
}

void Backend::all_reduce_begin(const std::vector<Tensor>& tensors, double factor) {
  if (factor == 1.0) return;
  for (const Tensor& t : tensors) scale(t, factor);
}

void Backend::broadcast(const std::vector<Tensor>& tensors, const std::vector<int>& roots) {
  check(tensors.size() == roots.size(), "broadcast: ", tensors.size(), " tensors but ", roots.size(), " roots");
  for (int root : roots) check(root == 0, "broadcast: root ", root, " does not exist (one process)");
}

}  // namespace ct
