#include "lab/statistics.h"

#include <cmath>
#include <limits>

#include "util/error.h"

namespace ct::lab {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Continued fraction of I_x(a, b) (evaluated with the modified Lentz method):
//   I_x(a,b) = x^a (1-x)^b / (a B(a,b)) * 1 / (1 + d1 / (1 + d2 / (1 + ...)))
//   d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),  d_{2m} = m(b-m) x / ((a+2m-1)(a+2m)).
// It converges quickly for x < (a+1)/(a+b+2); the caller uses the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
// otherwise.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-16;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double fraction = d;
  for (int m = 1; m <= 10000; ++m) {
    // even step d_{2m}
    double numerator = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
    d = 1.0 + numerator * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + numerator / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    fraction *= d * c;
    // odd step d_{2m+1}
    numerator = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
    d = 1.0 + numerator * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + numerator / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    double step = d * c;
    fraction *= step;
    if (std::fabs(step - 1.0) < kEpsilon) return fraction;
  }
  return fraction;  // not converged to 1e-16 after 10000 terms: still accurate far beyond our needs
}

// Upper tail of Student t: P(T > t) for t >= 0, computed directly (no 1 - cdf cancellation).
double student_t_upper_tail(double t, double df) {
  if (std::isinf(df)) return 0.5 * std::erfc(t / std::sqrt(2.0));
  double x = df / (df + t * t);
  return 0.5 * incomplete_beta(df / 2.0, 0.5, x);
}

// Smallest t >= 0 with upper_tail(t) <= tail, by doubling then bisection on a monotone function.
template <typename UpperTail>
double solve_upper_tail(UpperTail upper_tail, double tail) {
  double low = 0.0, high = 1.0;
  while (upper_tail(high) > tail) {
    low = high;
    high *= 2.0;
    check(high < 1e300, "quantile: tail probability ", tail, " is out of range");
  }
  for (int i = 0; i < 300 && high - low > 1e-15 * high; ++i) {
    double middle = 0.5 * (low + high);
    if (upper_tail(middle) > tail) low = middle;
    else high = middle;
  }
  return 0.5 * (low + high);
}

}  // namespace

double mean(std::span<const double> values) {
  check(!values.empty(), "mean: no values");
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double sample_std(std::span<const double> values) {
  check(values.size() >= 2, "sample standard deviation: needs at least 2 values, got ", values.size());
  double m = mean(values);
  double sum_squares = 0;
  for (double v : values) sum_squares += (v - m) * (v - m);
  return std::sqrt(sum_squares / static_cast<double>(values.size() - 1));
}

double incomplete_beta(double a, double b, double x) {
  check(a > 0 && b > 0, "incomplete beta: a and b must be positive (a=", a, ", b=", b, ")");
  check(x >= 0 && x <= 1, "incomplete beta: x must be in [0, 1], got ", x);
  if (x == 0.0) return 0.0;
  if (x == 1.0) return 1.0;
  // ln of the prefactor x^a (1-x)^b / B(a,b)
  double log_prefactor = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                         b * std::log1p(-x);
  double prefactor = std::exp(log_prefactor);
  if (x < (a + 1.0) / (a + b + 2.0)) return prefactor * beta_continued_fraction(a, b, x) / a;
  return 1.0 - prefactor * beta_continued_fraction(b, a, 1.0 - x) / b;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double p) {
  check(p > 0 && p < 1, "normal quantile: probability must be in (0, 1), got ", p);
  if (p < 0.5) return -normal_quantile(1.0 - p);
  if (p == 0.5) return 0.0;
  return solve_upper_tail([](double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }, 1.0 - p);
}

double student_t_cdf(double t, double df) {
  check(df > 0, "Student t: degrees of freedom must be positive, got ", df);
  if (std::isnan(t)) return kNaN;
  if (t >= 0) return 1.0 - student_t_upper_tail(t, df);
  return student_t_upper_tail(-t, df);
}

double student_t_quantile(double p, double df) {
  check(df > 0, "Student t quantile: degrees of freedom must be positive, got ", df);
  check(p > 0 && p < 1, "Student t quantile: probability must be in (0, 1), got ", p);
  if (std::isinf(df)) return normal_quantile(p);
  if (p < 0.5) return -student_t_quantile(1.0 - p, df);
  if (p == 0.5) return 0.0;
  return solve_upper_tail([df](double t) { return student_t_upper_tail(t, df); }, 1.0 - p);
}

double minimum_detectable_effect(double standard_error, double df, double confidence, double power) {
  check(confidence > 0 && confidence < 1, "confidence must be in (0, 1), got ", confidence);
  check(power > 0 && power < 1, "power must be in (0, 1), got ", power);
  if (!(df > 0) || !std::isfinite(standard_error)) return kNaN;
  double alpha = 1.0 - confidence;
  return (student_t_quantile(1.0 - alpha / 2.0, df) + student_t_quantile(power, df)) * standard_error;
}

LinearFit fit_line(std::span<const double> x, std::span<const double> y) {
  check(x.size() == y.size(), "line fit: ", x.size(), " x values but ", y.size(), " y values");
  check(x.size() >= 2, "line fit: needs at least 2 points, got ", x.size());
  double x_mean = mean(x), y_mean = mean(y);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - x_mean) * (x[i] - x_mean);
    sxy += (x[i] - x_mean) * (y[i] - y_mean);
  }
  check(sxx > 0, "line fit: all x values are equal (", x_mean, "), the slope is undefined");
  LinearFit fit;
  fit.points = static_cast<int>(x.size());
  fit.slope = sxy / sxx;
  fit.intercept = y_mean - fit.slope * x_mean;
  if (fit.points > 2) {
    double rss = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double r = y[i] - (fit.intercept + fit.slope * x[i]);
      rss += r * r;
    }
    double s2 = rss / (fit.points - 2);
    fit.residual_std = std::sqrt(s2);
    fit.slope_standard_error = std::sqrt(s2 / sxx);
  } else {
    fit.residual_std = kNaN;
    fit.slope_standard_error = kNaN;
  }
  return fit;
}

}  // namespace ct::lab
