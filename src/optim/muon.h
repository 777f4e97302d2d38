#pragma once
// Muon (docs/model.md): for each matrix, Nesterov momentum, Newton-Schulz orthogonalisation, and
//   p -= eta X,  eta = lr * lr_factor * max(1, rows/cols)^0.5
// with rows, cols = the stored [out, in] shape; with optimizer.muon_weight_decay, cautious weight decay
// as well (frontier.md 2.4): p -= eta (X + lambda_t p) where X p >= 0 (Backend::muon_update).
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
  // One update of every parameter with momentum mu, learning-rate factor lr_factor and cautious weight
  // decay lambda_t `weight_decay` (used when config.muon_weight_decay > 0: the choice of op follows the
  // recipe, not the step, so that a graph region's ops never change); with `owned` (one flag per
  // parameter), of the owned ones only (a sharded optimizer).
  void step(double lr_factor, double momentum, double weight_decay, const std::vector<bool>& owned = {});
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
