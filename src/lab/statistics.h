#pragma once
// Small-sample statistics for the lab: means, sample standard deviations, the Student t and normal
// distributions (CDF and quantile, implemented here and checked against scipy in tests/lab), the
// minimum detectable effect, and ordinary least squares with the slope's standard error.
#include <span>
#include <vector>

namespace ct::lab {

double mean(std::span<const double> values);
// Sample standard deviation (divisor n - 1); needs at least 2 values.
double sample_std(std::span<const double> values);

// Regularized incomplete beta function I_x(a, b), 0 <= x <= 1, a, b > 0.
double incomplete_beta(double a, double b, double x);

double normal_cdf(double z);
// z with normal_cdf(z) = p, 0 < p < 1.
double normal_quantile(double p);

// Student t with `df` degrees of freedom (df > 0, not necessarily an integer).
double student_t_cdf(double t, double df);
// t with student_t_cdf(t, df) = p, 0 < p < 1.
double student_t_quantile(double p, double df);

// Minimum detectable effect (two-sided test at `confidence`, detected with probability `power`):
//   MDE = (t_{1-alpha/2, df} + t_{power, df}) * standard_error
// where alpha = 1 - confidence and standard_error is the standard error of the compared difference
// (sigma * sqrt(1/n_a + 1/n_b) for two independent arms, sigma_d / sqrt(n) for n pairs).
// This is the usual t approximation of the noncentral-t power calculation; for df -> infinity it is
// the normal formula (z_{1-alpha/2} + z_power) * standard_error.
double minimum_detectable_effect(double standard_error, double df, double confidence, double power);

// Ordinary least squares y = intercept + slope * x.
struct LinearFit {
  double slope = 0, intercept = 0;
  double slope_standard_error = 0;  // sqrt(s^2 / Sxx), s^2 = RSS / (n - 2); NaN when n <= 2
  double residual_std = 0;          // s; NaN when n <= 2
  int points = 0;
  int df() const { return points - 2; }
};
LinearFit fit_line(std::span<const double> x, std::span<const double> y);

}  // namespace ct::lab
