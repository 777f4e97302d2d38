#pragma once
// Helpers for the backend tests: one shared CPU backend, seeded random host data, host <-> tensor
// moves through f64, central finite differences in float64, and memory that ends at an unreadable page.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "util/error.h"

namespace ct::test {

using Values = std::vector<double>;

inline Backend& cpu() {
  static std::unique_ptr<Backend> backend = [] {
    BackendOptions options;
    options.name = "cpu";
    return create_backend(options);
  }();
  return *backend;
}

inline Values random_values(size_t count, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  Values values(count);
  for (double& v : values) v = normal(rng);
  return values;
}

// c = alpha op(a) op(b) + beta c on the host, in double: a [m, k] (or [k, m] when ta), b [k, n] (or
// [n, k] when tb), c [m, n].
inline Values naive_gemm(const Values& a, const Values& b, const Values& c, int64_t m, int64_t n, int64_t k, bool ta,
                         bool tb, double alpha, double beta) {
  Values out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double total = 0;
      for (int64_t p = 0; p < k; ++p)
        total += a[static_cast<size_t>(ta ? p * m + i : i * k + p)] * b[static_cast<size_t>(tb ? j * k + p : p * n + j)];
      out[static_cast<size_t>(i * n + j)] = alpha * total + beta * c[static_cast<size_t>(i * n + j)];
    }
  return out;
}

// A buffer of `dtype` holding `values` (converted from f64).
inline Buffer make_buffer(const Shape& shape, DType dtype, const Values& values) {
  Buffer buffer(cpu(), shape, dtype);
  EXPECT_EQ(static_cast<int64_t>(values.size()), shape.numel());
  cpu().upload(buffer, values.data(), DType::f64);
  return buffer;
}

inline Buffer make_tokens(const Shape& shape, const std::vector<int32_t>& ids) {
  Buffer buffer(cpu(), shape, DType::i32);
  cpu().upload(buffer, ids.data(), DType::i32);
  return buffer;
}

inline Values read(const Tensor& t) {
  Values values(static_cast<size_t>(t.numel()));
  cpu().download(values.data(), DType::f64, t);
  return values;
}

inline double dot(const Values& a, const Values& b) {
  double total = 0;
  for (size_t i = 0; i < a.size(); ++i) total += a[i] * b[i];
  return total;
}

// max_i |a_i - b_i| / max(max_i |b_i|, floor): the error relative to the reference's scale.
inline double relative_error(const Values& a, const Values& b, double floor = 1e-30) {
  EXPECT_EQ(a.size(), b.size());
  double max_diff = 0, max_ref = floor;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(a[i] - b[i]));
    max_ref = std::max(max_ref, std::abs(b[i]));
  }
  return max_diff / max_ref;
}

// d loss / d x by central differences, x perturbed one element at a time (float64, h = 1e-6).
inline Values finite_difference_gradient(const std::function<double(const Values&)>& loss, Values x,
                                         double h = 1e-6) {
  Values grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + h;
    double plus = loss(x);
    x[i] = saved - h;
    double minus = loss(x);
    x[i] = saved;
    grad[i] = (plus - minus) / (2 * h);
  }
  return grad;
}

// Checks an analytic gradient of loss(x) = w . forward(x) against central differences.
inline void expect_gradient_matches(const std::function<Values(const Values&)>& forward, const Values& x,
                                    const Values& w, const Values& analytic, double tolerance = 1e-6) {
  Values numeric = finite_difference_gradient([&](const Values& xs) { return dot(w, forward(xs)); }, x);
  EXPECT_LT(relative_error(analytic, numeric), tolerance);
}

// Runs fn and expects a ct::Error whose message contains every one of `fragments`.
template <typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected a ct::Error mentioning " << fragments.front();
  } catch (const Error& e) {
    std::string message = e.what();
    for (const auto& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message << "\nmissing: " << fragment;
  }
}

// `bytes` of writable memory whose end is where a PROT_NONE page begins, so that a kernel that reads
// or writes one byte past the end crashes the test (a prefetch does not fault).
class BytesBeforeAGuardPage {
 public:
  explicit BytesBeforeAGuardPage(size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mapped_ = (bytes + page - 1) / page * page + page;
    base_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw Error("mmap failed");
    char* guard = static_cast<char*>(base_) + mapped_ - page;
    if (mprotect(guard, page, PROT_NONE) != 0) throw Error("mprotect failed");
    begin_ = guard - bytes;
  }
  ~BytesBeforeAGuardPage() { munmap(base_, mapped_); }
  BytesBeforeAGuardPage(const BytesBeforeAGuardPage&) = delete;
  BytesBeforeAGuardPage& operator=(const BytesBeforeAGuardPage&) = delete;
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(begin_);
  }

 private:
  void* base_ = nullptr;
  size_t mapped_ = 0;
  char* begin_ = nullptr;
};

}  // namespace ct::test
