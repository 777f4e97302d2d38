#include "lab/loss_model.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include "clocktrain_version.h"
#include "harness/json_fields.h"
#include "model/config.h"
#include "util/cpu_info.h"
#include "util/error.h"
#include "util/files.h"

namespace ct::lab {

namespace {

constexpr const char* kFormat = "clocktrain-loss-model/1";
constexpr const char* kLaw =
    "val_bpb = E + A / N^alpha + B / D^beta; N = matmul parameters (every parameter but wte), D = tokens trained";
constexpr const char* kMethod =
    "least squares; for each (alpha, beta) the exact minimum over E, A, B >= 0 (every support of the 3x3 normal "
    "equations); (alpha, beta) on a grid of step 0.02 over [0.02, 2], refined 6 times by 5x around the best";
constexpr const char* kHeldOut = "leave-one-out";
constexpr double kGridStep = 0.02;
constexpr int kRefinements = 6, kRefineFactor = 5;
constexpr int64_t kMaxCount = int64_t{1} << 60;

// The linear part at fixed (alpha, beta): with x1_i = N_i^-alpha, x2_i = D_i^-beta and c = (E, A, B),
// minimise S(c) = sum_i (y_i - E - A x1_i - B x2_i)^2 subject to c >= 0. S is convex, so its
// constrained minimum c* satisfies KKT: on its support P = {j : c*_j > 0} it is the unconstrained least
// squares solution of the columns in P. Hence solving the normal equations G_PP c_P = h_P for each of
// the 8 supports P, keeping the solutions with c_P >= 0 and taking the smallest S among them, gives c*
// exactly (every kept solution is feasible, and c*'s own support is among those tried). A support whose
// columns are collinear (a pivot below 1e-12 after scaling the columns to unit norm) is skipped: the
// smaller supports inside it reach the same fitted values.
struct Linear {
  std::array<double, 3> c{};  // E, A, B
  double sse = std::numeric_limits<double>::infinity();
};

struct Columns {
  std::vector<double> x1, x2;
};

Linear solve_linear(const std::vector<LossPoint>& p, const Columns& x) {
  const size_t n = p.size();
  auto column = [&](int j, size_t i) { return j == 0 ? 1.0 : j == 1 ? x.x1[i] : x.x2[i]; };
  Linear best;
  for (int support = 0; support < 8; ++support) {
    std::array<int, 3> cols{};
    int k = 0;
    for (int j = 0; j < 3; ++j)
      if (support & (1 << j)) cols[k++] = j;
    // Normal equations G z = h on the support (G_ab = sum_i x_a x_b, h_a = sum_i x_a y), augmented
    // [G | h], then the columns scaled by s_a = sqrt(G_aa) for conditioning: G_ab / (s_a s_b), h_a / s_a.
    double G[3][4] = {};
    for (size_t i = 0; i < n; ++i)
      for (int a = 0; a < k; ++a) {
        const double xa = column(cols[a], i);
        for (int b = 0; b < k; ++b) G[a][b] += xa * column(cols[b], i);
        G[a][3] += xa * p[i].val_bpb;
      }
    std::array<double, 3> scale{};
    bool ok = true;
    for (int a = 0; a < k; ++a) {
      scale[a] = std::sqrt(G[a][a]);
      ok &= scale[a] > 0;
    }
    if (!ok) continue;
    for (int a = 0; a < k; ++a) {
      for (int b = 0; b < k; ++b) G[a][b] /= scale[a] * scale[b];
      G[a][3] /= scale[a];
    }
    // Gauss-Jordan elimination with partial pivoting.
    for (int col = 0; col < k && ok; ++col) {
      int pivot = col;
      for (int r = col + 1; r < k; ++r)
        if (std::abs(G[r][col]) > std::abs(G[pivot][col])) pivot = r;
      if (std::abs(G[pivot][col]) < 1e-12) {
        ok = false;
        break;
      }
      if (pivot != col)
        for (int b = 0; b < 4; ++b) std::swap(G[pivot][b], G[col][b]);
      for (int r = 0; r < k; ++r) {
        if (r == col) continue;
        const double f = G[r][col] / G[col][col];
        for (int b = col; b < 4; ++b) G[r][b] -= f * G[col][b];
      }
    }
    if (!ok) continue;
    Linear candidate;
    candidate.c = {0, 0, 0};
    for (int a = 0; a < k; ++a) {
      const double value = G[a][3] / G[a][a] / scale[a];  // z_a / s_a
      if (!(value >= 0)) ok = false;
      candidate.c[cols[a]] = value;
    }
    if (!ok) continue;
    candidate.sse = 0;
    for (size_t i = 0; i < n; ++i) {
      const double r = p[i].val_bpb - candidate.c[0] - candidate.c[1] * x.x1[i] - candidate.c[2] * x.x2[i];
      candidate.sse += r * r;
    }
    if (candidate.sse < best.sse) best = candidate;
  }
  return best;
}

struct Cell {
  double alpha = 0, beta = 0;
  Linear linear;
};

Cell evaluate(const std::vector<LossPoint>& p, double alpha, double beta) {
  Columns x;
  for (const LossPoint& q : p) {
    x.x1.push_back(std::pow(q.parameters, -alpha));
    x.x2.push_back(std::pow(q.tokens, -beta));
  }
  return {alpha, beta, solve_linear(p, x)};
}

// The grid search, without the checks of fit_loss_law (leave_one_out fits subsets with it). The sum of
// squares as a function of (alpha, beta) alone (E, A, B at their exact minimum) is evaluated on the
// 100 x 100 grid 0.02, 0.04, ..., 2; then 6 times on an 11 x 11 grid spanning +/- one previous step
// around the best, 5 times finer (final spacing 0.02 / 5^6 = 1.3e-6), clamped to the range.
LossFit fit_points(const std::vector<LossPoint>& p) {
  const int cells = static_cast<int>(std::lround((kLossExponentMax - kLossExponentMin) / kGridStep)) + 1;
  Cell best;
  for (int i = 0; i < cells; ++i)
    for (int j = 0; j < cells; ++j) {
      Cell c = evaluate(p, kLossExponentMin + i * kGridStep, kLossExponentMin + j * kGridStep);
      if (c.linear.sse < best.linear.sse) best = c;
    }
  double step = kGridStep;
  for (int round = 0; round < kRefinements; ++round) {
    step /= kRefineFactor;
    const Cell centre = best;
    for (int i = -kRefineFactor; i <= kRefineFactor; ++i)
      for (int j = -kRefineFactor; j <= kRefineFactor; ++j) {
        const double alpha = std::clamp(centre.alpha + i * step, kLossExponentMin, kLossExponentMax);
        const double beta = std::clamp(centre.beta + j * step, kLossExponentMin, kLossExponentMax);
        Cell c = evaluate(p, alpha, beta);
        if (c.linear.sse < best.linear.sse) best = c;
      }
  }
  LossFit fit;
  fit.law = {best.linear.c[0], best.linear.c[1], best.alpha, best.linear.c[2], best.beta};
  fit.residual_rms = std::sqrt(best.linear.sse / static_cast<double>(p.size()));
  return fit;
}

void check_points(const std::vector<LossPoint>& p, const std::string& where) {
  check(p.size() >= kMinLossPoints, where, ": the loss model needs at least ", kMinLossPoints,
        " points (5 coefficients and one degree of freedom), got ", p.size());
  std::set<double> parameters, tokens;
  for (size_t i = 0; i < p.size(); ++i) {
    check(std::isfinite(p[i].parameters) && p[i].parameters > 0, where, ": point ", i,
          ": parameters must be a positive number, got ", p[i].parameters);
    check(std::isfinite(p[i].tokens) && p[i].tokens > 0, where, ": point ", i,
          ": tokens must be a positive number, got ", p[i].tokens);
    check(std::isfinite(p[i].val_bpb), where, ": point ", i, ": val_bpb must be finite, got ", p[i].val_bpb);
    parameters.insert(p[i].parameters);
    tokens.insert(p[i].tokens);
  }
  check(parameters.size() >= 3 && tokens.size() >= 3, where,
        ": the loss model needs at least 3 distinct parameter counts and 3 distinct token counts (a ladder of "
        "depths x token counts), got ",
        parameters.size(), " and ", tokens.size());
}

void only_fields(const FieldReader& r, std::initializer_list<const char*> known) {
  for (const auto& item : r.json().items()) {
    const std::string& key = item.key();  // a plain name: clang 14 cannot capture a structured binding
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) == known.end())
      fail(r.where(), ": unknown field '", r.field_path(key), "'");
  }
}

void expect_string(const FieldReader& r, const std::string& key, const std::string& expected) {
  if (r.string(key) != expected) r.fail_field(key, str("\"", expected, "\""));
}

}  // namespace

double LossLaw::predict(double parameters, double tokens) const {
  return E + A * std::pow(parameters, -alpha) + B * std::pow(tokens, -beta);
}

LossFit fit_loss_law(const std::vector<LossPoint>& points, const std::string& where) {
  check_points(points, where);
  return fit_points(points);
}

HeldOutErrors leave_one_out(const std::vector<LossPoint>& points, const std::string& where) {
  check_points(points, where);
  HeldOutErrors h;
  double sum_squares = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<LossPoint> rest = points;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    const double error = fit_points(rest).law.predict(points[i].parameters, points[i].tokens) - points[i].val_bpb;
    h.errors.push_back(error);
    sum_squares += error * error;
    h.max_abs = std::max(h.max_abs, std::abs(error));
  }
  h.rms = std::sqrt(sum_squares / static_cast<double>(points.size()));
  return h;
}

LossRun loss_run_from_record(const RunRecord& record) {
  const std::string where = (record.run_dir / "result.json").string();
  FieldReader r(record.result, where);
  LossRun run;
  run.name = record.name;
  run.run_dir = record.run_dir.string();
  run.parameters = r.integer("parameters", 1, kMaxCount);
  run.tokens = r.integer("tokens", 1, kMaxCount);
  check(record.val_bpb.has_value(), where,
        ": field 'val_bpb': null (the run has no finite score), so it cannot be fitted");
  run.val_bpb = *record.val_bpb;
  const FieldReader model = r.object("recipe").object("resolved").object("model");
  // The dial's fields are not ModelConfig's; the shape they derived is beside them.
  Json shape = model.json();
  for (const char* dial : {"depth", "aspect_ratio", "head_dim"}) shape.erase(dial);
  const ModelConfig config = model_config_from_json(shape, str(where, ": field 'recipe.resolved.model'"));
  check(config.parameter_count() == run.parameters, where, ": field 'parameters': ", run.parameters,
        " is not the parameter count of recipe.resolved.model (", config.parameter_count(), ")");
  run.matmul_parameters = config.matmul_parameter_count();
  run.depth = model.has("depth") ? model.integer("depth", 1, 4096) : config.n_layer;
  run.device = r.object("device").string("description");
  run.clocktrain = r.object("binary").string("version");
  return run;
}

LossPrediction LossModel::predict(double parameters, double tokens) const {
  const double y = law.predict(parameters, tokens);
  return {y, y - interval_half_width(), y + interval_half_width()};
}

LossModel fit_loss_model(std::vector<LossRun> runs, const std::string& where) {
  std::vector<LossPoint> points;
  for (const LossRun& run : runs)
    points.push_back({static_cast<double>(run.matmul_parameters), static_cast<double>(run.tokens), run.val_bpb});
  const LossFit fit = fit_loss_law(points, where);
  const HeldOutErrors held_out = leave_one_out(points, where);
  LossModel m;
  m.law = fit.law;
  m.residual_rms = fit.residual_rms;
  m.held_out_rms = held_out.rms;
  m.held_out_max_abs = held_out.max_abs;
  for (size_t i = 0; i < runs.size(); ++i) runs[i].held_out_error = held_out.errors[i];
  m.runs = std::move(runs);
  const CpuInfo& cpu = cpu_info();
  m.clocktrain = kVersion;
  m.cpu_model = cpu.model_name;
  m.cpu_level = cpu_level_name(cpu.level);
  m.cpu_flags = cpu.flag_summary();
  m.created_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return m;
}

Json to_json(const LossModel& m) {
  Json runs = Json::array();
  for (const LossRun& r : m.runs)
    runs.push_back({{"name", r.name},
                    {"run_dir", r.run_dir},
                    {"depth", r.depth},
                    {"parameters", r.parameters},
                    {"matmul_parameters", r.matmul_parameters},
                    {"tokens", r.tokens},
                    {"val_bpb", r.val_bpb},
                    {"held_out_error", r.held_out_error},
                    {"device", r.device},
                    {"clocktrain", r.clocktrain}});
  return Json{
      {"format", kFormat},
      {"law", kLaw},
      {"coefficients", {{"E", m.law.E}, {"A", m.law.A}, {"alpha", m.law.alpha}, {"B", m.law.B}, {"beta", m.law.beta}}},
      {"fit",
       {{"method", kMethod},
        {"points", m.runs.size()},
        {"residual_rms", m.residual_rms},
        {"held_out", kHeldOut},
        {"held_out_rms", m.held_out_rms},
        {"held_out_max_abs", m.held_out_max_abs},
        {"interval_half_width", m.interval_half_width()}}},
      {"provenance",
       {{"clocktrain", m.clocktrain},
        {"machine", {{"cpu_model", m.cpu_model}, {"cpu_level", m.cpu_level}, {"cpu_flags", m.cpu_flags}}},
        {"created_unix", m.created_unix},
        {"runs", runs}}}};
}

LossModel loss_model_from_json(const Json& j, const std::string& where) {
  FieldReader r(j, where);
  only_fields(r, {"format", "law", "coefficients", "fit", "provenance"});
  expect_string(r, "format", kFormat);
  expect_string(r, "law", kLaw);
  LossModel m;
  const FieldReader c = r.object("coefficients");
  only_fields(c, {"E", "A", "alpha", "B", "beta"});
  m.law.E = c.non_negative("E");
  m.law.A = c.non_negative("A");
  m.law.alpha = c.non_negative("alpha");
  m.law.B = c.non_negative("B");
  m.law.beta = c.non_negative("beta");

  const FieldReader f = r.object("fit");
  only_fields(f, {"method", "points", "residual_rms", "held_out", "held_out_rms", "held_out_max_abs",
                  "interval_half_width"});
  f.string("method");
  expect_string(f, "held_out", kHeldOut);
  const int64_t points = f.integer("points", static_cast<int64_t>(kMinLossPoints), kMaxCount);
  m.residual_rms = f.non_negative("residual_rms");
  m.held_out_rms = f.non_negative("held_out_rms");
  m.held_out_max_abs = f.non_negative("held_out_max_abs");
  if (f.non_negative("interval_half_width") != m.interval_half_width())
    f.fail_field("interval_half_width", str("fit.held_out_max_abs (", m.held_out_max_abs, ")"));

  const FieldReader p = r.object("provenance");
  only_fields(p, {"clocktrain", "machine", "created_unix", "runs"});
  m.clocktrain = p.string("clocktrain");
  const FieldReader machine = p.object("machine");
  only_fields(machine, {"cpu_model", "cpu_level", "cpu_flags"});
  m.cpu_model = machine.string("cpu_model");
  m.cpu_level = machine.string("cpu_level");
  m.cpu_flags = machine.string("cpu_flags");
  m.created_unix = p.non_negative("created_unix");
  const Json& runs = p.array("runs");
  if (static_cast<int64_t>(runs.size()) != points)
    p.fail_field("runs", str(points, " runs (fit.points), got ", runs.size()));
  for (size_t i = 0; i < runs.size(); ++i) {
    const FieldReader e = p.element(runs, i, "runs");
    only_fields(e, {"name", "run_dir", "depth", "parameters", "matmul_parameters", "tokens", "val_bpb",
                    "held_out_error", "device", "clocktrain"});
    LossRun run;
    run.name = e.string("name");
    run.run_dir = e.string("run_dir");
    run.depth = e.integer("depth", 1, 4096);
    run.parameters = e.integer("parameters", 1, kMaxCount);
    run.matmul_parameters = e.integer("matmul_parameters", 1, run.parameters);
    run.tokens = e.integer("tokens", 1, kMaxCount);
    run.val_bpb = e.finite("val_bpb");
    run.held_out_error = e.finite("held_out_error");
    run.device = e.string("device");
    run.clocktrain = e.string("clocktrain");
    m.runs.push_back(std::move(run));
  }
  return m;
}

void write_loss_model(const std::filesystem::path& path, const LossModel& model) {
  write_file_atomic(path, to_json(model).dump(2) + "\n");
}

LossModel read_loss_model(const std::filesystem::path& path) {
  return loss_model_from_json(read_json_file(path), path.string());
}

}  // namespace ct::lab
