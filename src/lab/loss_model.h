#pragma once
// The loss model (docs/lab.md): val_bpb as a function of the model's size N and the tokens it
// trained on D, a Chinchilla-style law (Hoffmann et al. 2022, eq. 2)
//
//   val_bpb(N, D) = E + A / N^alpha + B / D^beta,     E, A, B >= 0, alpha, beta in [0.02, 2],
//
// fitted by least squares on runs of a ladder (depths x token counts). N is
// ModelConfig::matmul_parameter_count() (every parameter but the embedding table wte: nanochat's
// scaling count N_s, the count the depth rule's batch size follows); D is result.json's "tokens".
// docs/lab.md, "The loss model", is the user's guide.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lab/run_record.h"
#include "util/json.h"

namespace ct::lab {

// The law's coefficients.
struct LossLaw {
  double E = 0, A = 0, alpha = 0, B = 0, beta = 0;
  double predict(double parameters, double tokens) const;
};

struct LossPoint {
  double parameters = 0;  // N > 0
  double tokens = 0;      // D > 0
  double val_bpb = 0;
};

// A fit needs at least this many points (5 coefficients and one degree of freedom left), and at least
// 3 distinct values of N and of D (with two, a power law's exponent cannot be told from its constant).
inline constexpr size_t kMinLossPoints = 6;
inline constexpr double kLossExponentMin = 0.02, kLossExponentMax = 2.0;

struct LossFit {
  LossLaw law;
  double residual_rms = 0;  // sqrt(mean (prediction - val_bpb)^2) over the fitted points
};

// Least squares, sum_i (law(N_i, D_i) - y_i)^2, with E, A, B >= 0. For fixed (alpha, beta) the law is
// linear in (E, A, B) and is solved exactly (see loss_model.cpp); (alpha, beta) are searched on a grid
// over [kLossExponentMin, kLossExponentMax]^2, step 0.02, refined around the best cell. Errors name
// `where` and what is wrong with the points (too few, N or D not positive, too few distinct values).
LossFit fit_loss_law(const std::vector<LossPoint>& points, const std::string& where);

// Leave-one-out: errors[i] = (law fitted to every point but i)(N_i, D_i) - y_i, the error on a ladder
// point held out of the fit. rms and max_abs summarise them.
struct HeldOutErrors {
  std::vector<double> errors;
  double rms = 0;
  double max_abs = 0;
};
HeldOutErrors leave_one_out(const std::vector<LossPoint>& points, const std::string& where);

// A run the model was fitted to (the provenance of each point).
struct LossRun {
  std::string name;  // the recipe name
  std::string run_dir;
  int64_t depth = 0;              // recipe.resolved.model.depth, or n_layer for a recipe without the dial
  int64_t parameters = 0;         // result.json "parameters" (every parameter)
  int64_t matmul_parameters = 0;  // N
  int64_t tokens = 0;             // D
  double val_bpb = 0;
  std::string device;         // result.json device.description: the machine it ran on
  std::string clocktrain;     // result.json binary.version: the commit it ran
  double held_out_error = 0;  // leave_one_out's error for this run
};

// A run's point, from its result.json: N from recipe.resolved.model (which must give result.json's
// "parameters" as ModelConfig::parameter_count()), D from "tokens", val_bpb. Errors name the run's
// result.json and the field.
LossRun loss_run_from_record(const RunRecord& record);

struct LossPrediction {
  double val_bpb = 0;
  double low = 0, high = 0;  // val_bpb -/+ the model's interval_half_width()
};

struct LossModel {
  LossLaw law;
  double residual_rms = 0;
  double held_out_rms = 0;
  double held_out_max_abs = 0;
  // The interval of a prediction is +/- the largest leave-one-out error (docs/lab.md, "The loss model").
  double interval_half_width() const { return held_out_max_abs; }
  LossPrediction predict(double parameters, double tokens) const;
  // Provenance: the binary and the machine that fitted it, the runs it came from.
  std::string clocktrain;                       // kVersion ("0.1.0+<commit>")
  std::string cpu_model, cpu_level, cpu_flags;  // util/cpu_info.h of the fitting machine
  double created_unix = 0;
  std::vector<LossRun> runs;
};

// Fits the runs (fit_loss_law, leave_one_out) and records the provenance of this binary and machine.
LossModel fit_loss_model(std::vector<LossRun> runs, const std::string& where);

// The file, "format": "clocktrain-loss-model/1" (docs/lab.md). Reading is strict: unknown fields,
// missing fields, wrong types, negative or non-finite coefficients are errors naming `where` and the
// field ("coefficients.alpha", "provenance.runs[3].tokens").
Json to_json(const LossModel& model);
LossModel loss_model_from_json(const Json& j, const std::string& where);
void write_loss_model(const std::filesystem::path& path, const LossModel& model);
LossModel read_loss_model(const std::filesystem::path& path);

}  // namespace ct::lab
