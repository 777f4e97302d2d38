#pragma once
// Muon (docs/model.md): for each matrix, Nesterov momentum, Newton-Schulz orthogonalisation, and
//   p -= lr * lr_factor * max(1, rows/cols)^0.5 * X
// with rows, cols = the stored [out, in] shape.
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "model/parameters.h"
#include "optim/config.h"

namespace ct {

class Muon {
 public:
  Muon(Backend& backend, std::vector<Parameter*> params, const OptimizerConfig& config);
  // One update of every parameter with momentum mu and learning-rate factor lr_factor; with
  // `owned` (one flag per parameter), of the owned ones only (a sharded optimizer).
  void step(double lr_factor, double momentum, const std::vector<bool>& owned = {});
  // The momentum buffers, named "muon.momentum/<parameter name>", for checkpoints.
  std::vector<std::pair<std::string, const Buffer*>> state() const;

 private:
  Backend* backend_;
  std::vector<Parameter*> params_;
  OptimizerConfig config_;
  std::vector<Buffer> momentum_;
  Buffer update_scratch_, ortho_scratch_;  // u and X of a group of matrices (at least 4 M elements, or the largest)
};

}  // namespace ct
