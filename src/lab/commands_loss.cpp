// lab fit-loss, lab predict: the loss model (lab/loss_model.h) from run folders or a ledger experiment.
#include <cmath>
#include <cstdio>
#include <set>

#include "lab/formatting.h"
#include "lab/lab_commands.h"
#include "lab/run_selection.h"
#include "util/error.h"
#include "util/text_table.h"

namespace ct::lab {

namespace {

// A number with 6 significant digits ("0.712345", "41.2871", "1.23457e+06").
std::string significant(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", x);
  return buffer;
}

std::string signed_fixed(double x, int decimals) { return (x >= 0 ? "+" : "") + format_fixed(x, decimals); }

}  // namespace

LossModel lab_fit_loss(const FitLossOptions& o, std::ostream& out) {
  check(!o.run_dirs.empty() || o.experiment, "lab fit-loss: give run folders or --experiment ID");
  std::vector<LossRun> runs;
  std::set<fs::path> seen;  // each run folder once
  for (const fs::path& dir : o.run_dirs) {
    RunRecord record = read_run_record(dir);
    if (seen.insert(record.run_dir).second) runs.push_back(loss_run_from_record(record));
  }
  if (o.experiment) {
    Ledger ledger(o.ledger, false);
    for (const StoredRun& run : ledger.runs(*o.experiment)) {
      std::string why;
      if (!usable_for_statistics(run, "val_bpb", &why)) {
        out << "left out run " << run.id << " (" << run.record.run_dir.string() << "): " << why << "\n";
        continue;
      }
      if (seen.insert(run.record.run_dir).second) runs.push_back(loss_run_from_record(run.record));
    }
  }
  const LossModel model = fit_loss_model(std::move(runs), "lab fit-loss");

  out << "val_bpb = E + A / N^alpha + B / D^beta  (N = matmul parameters, D = tokens trained; " << model.runs.size()
      << " runs)\n";
  TextTable coefficients({"coefficient", "value"});
  coefficients.add_row({"E", significant(model.law.E)});
  coefficients.add_row({"A", significant(model.law.A)});
  coefficients.add_row({"alpha", significant(model.law.alpha)});
  coefficients.add_row({"B", significant(model.law.B)});
  coefficients.add_row({"beta", significant(model.law.beta)});
  out << coefficients.render(2);
  for (const auto& [name, value] : {std::pair{"alpha", model.law.alpha}, std::pair{"beta", model.law.beta}})
    if (value <= kLossExponentMin || value >= kLossExponentMax)
      out << "  note: " << name << " is at the bound of its search range [" << kLossExponentMin << ", "
          << kLossExponentMax << "]: the runs do not pin it down\n";
  out << "  residual RMS " << format_fixed(model.residual_rms, 5) << "; held out (leave-one-out): RMS "
      << format_fixed(model.held_out_rms, 5) << ", max |error| " << format_fixed(model.held_out_max_abs, 5)
      << " (a prediction's interval is +/- this)\n";
  TextTable table({"run", "depth", "parameters", "N", "tokens", "tokens/N", "val_bpb", "fitted", "held-out error"});
  for (const LossRun& r : model.runs) {
    const double n = static_cast<double>(r.matmul_parameters), d = static_cast<double>(r.tokens);
    table.add_row({r.run_dir, std::to_string(r.depth), format_count(r.parameters), format_count(r.matmul_parameters),
                   format_count(r.tokens), format_fixed(d / n, 2), format_fixed(r.val_bpb, 4),
                   format_fixed(model.law.predict(n, d), 4), signed_fixed(r.held_out_error, 4)});
  }
  out << table.render(2);
  write_loss_model(o.out, model);
  out << "wrote " << o.out.string() << "\n";
  return model;
}

LossPrediction lab_predict(const PredictOptions& o, std::ostream& out) {
  check(std::isfinite(o.parameters) && o.parameters > 0, "lab predict: --parameters must be a positive number, got ",
        o.parameters);
  check(std::isfinite(o.tokens) && o.tokens > 0, "lab predict: --tokens must be a positive number, got ", o.tokens);
  const LossModel model = read_loss_model(o.model);
  const LossPrediction p = model.predict(o.parameters, o.tokens);
  if (o.json) {
    out << Json{{"parameters", o.parameters},
                {"tokens", o.tokens},
                {"predicted_val_bpb", p.val_bpb},
                {"interval", {p.low, p.high}},
                {"model", o.model.string()}}
               .dump()
        << "\n";
  } else {
    out << "predicted val_bpb " << format_fixed(p.val_bpb, 4) << " [" << format_fixed(p.low, 4) << ", "
        << format_fixed(p.high, 4) << "] at N = " << format_count(std::llround(o.parameters))
        << " matmul parameters, D = " << format_count(std::llround(o.tokens)) << " tokens (" << o.model.string()
        << ", fitted to " << model.runs.size() << " runs)\n";
  }
  return p;
}

}  // namespace ct::lab
