// ct::PythonRandom against golden vectors from the system python3 (tests/python/gen_random_golden.py,
// checked in as tests/golden/python_random.json).
#include "util/python_random.h"

#include <cstdio>
#include <numeric>

#include "test_support.h"
#include "util/files.h"
#include "util/json.h"

namespace ct {
namespace {

fs::path golden_path() { return test::source_dir() / "tests/golden/python_random.json"; }

// "0x1f..." -> the little-endian 32-bit words of the value (no trailing zero words; empty for 0).
std::vector<uint32_t> hex_to_words(const std::string& hex) {
  std::string digits = hex.substr(2);
  std::vector<uint32_t> words;
  for (size_t end = digits.size(); end > 0;) {
    size_t begin = end >= 8 ? end - 8 : 0;
    words.push_back(static_cast<uint32_t>(std::stoul(digits.substr(begin, end - begin), nullptr, 16)));
    end = begin;
  }
  while (!words.empty() && words.back() == 0) words.pop_back();
  return words;
}

std::vector<uint32_t> trimmed(std::vector<uint32_t> words) {
  while (!words.empty() && words.back() == 0) words.pop_back();
  return words;
}

PythonRandom seeded(const Json& c) { return PythonRandom::from_decimal(c["seed"].get<std::string>()); }

Json load_golden() { return Json::parse(read_file(golden_path())); }

TEST(PythonRandom, GoldenFileIsWhatTheGeneratorWrites) {
  // The checked-in vectors must be exactly what this machine's python3 produces now.
  test::TempDir dir;
  auto out = dir / "golden.json";
  auto result = test::run_command(test::python() + " " +
                                  (test::source_dir() / "tests/python/gen_random_golden.py").string() + " " +
                                  out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_file(out), read_file(golden_path()));
}

TEST(PythonRandom, RawOutputsAndRandom) {
  Json golden = load_golden();
  ASSERT_GE(golden["cases"].size(), 20u);
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE("seed " + c["seed"].get<std::string>());
    auto r = seeded(c);
    for (const auto& v : c["uint32"]) EXPECT_EQ(r.next_uint32(), v.get<uint32_t>());
    auto r2 = seeded(c);
    for (const auto& v : c["random"]) {
      double x = r2.random();
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%a", x);
      // float.hex() and %a differ in spelling; compare the value parsed from Python's text.
      EXPECT_EQ(x, std::strtod(v.get<std::string>().c_str(), nullptr)) << buf << " vs " << v;
    }
  }
}

TEST(PythonRandom, GetrandbitsAnyWidth) {
  Json golden = load_golden();
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE("seed " + c["seed"].get<std::string>());
    auto r = seeded(c);
    auto r64 = seeded(c);
    for (const auto& kv : c["getrandbits"]) {
      int k = kv[0].get<int>();
      auto expected = hex_to_words(kv[1].get<std::string>());
      auto words = r.getrandbits_words(k);
      EXPECT_EQ(words.size(), static_cast<size_t>((k + 31) / 32)) << "k=" << k;
      EXPECT_EQ(trimmed(words), expected) << "k=" << k;
      if (k <= 64) {
        uint64_t v = r64.getrandbits(k);
        uint64_t want = 0;
        for (size_t i = 0; i < expected.size(); ++i) want |= static_cast<uint64_t>(expected[i]) << (32 * i);
        EXPECT_EQ(v, want) << "k=" << k;
      } else {
        r64.getrandbits_words(k);  // keep the two generators in step
      }
    }
  }
}

TEST(PythonRandom, Randbelow) {
  Json golden = load_golden();
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE("seed " + c["seed"].get<std::string>());
    auto r = seeded(c);
    for (const auto& nv : c["randbelow"]) {
      uint64_t n = std::stoull(nv[0].get<std::string>());
      EXPECT_EQ(r.randbelow(n), std::stoull(nv[1].get<std::string>())) << "n=" << n;
    }
  }
}

TEST(PythonRandom, Shuffle) {
  Json golden = load_golden();
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE("seed " + c["seed"].get<std::string>());
    for (const auto& expected : c["shuffle"]) {
      std::vector<int> x(expected.size());
      std::iota(x.begin(), x.end(), 0);
      seeded(c).shuffle(x);
      EXPECT_EQ(x, expected.get<std::vector<int>>()) << "size " << x.size();
    }
  }
}

TEST(PythonRandom, SampleBothStrategies) {
  Json golden = load_golden();
  int pool_cases = 0, set_cases = 0;
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE("seed " + c["seed"].get<std::string>());
    for (const auto& s : c["sample"]) {
      size_t n = s["n"].get<size_t>(), k = s["k"].get<size_t>();
      bool pool = s["pool"].get<bool>();
      EXPECT_EQ(PythonRandom::sample_uses_pool(n, k), pool) << "n=" << n << " k=" << k;
      (pool ? pool_cases : set_cases)++;
      std::vector<int> population(n);
      std::iota(population.begin(), population.end(), 0);
      EXPECT_EQ(seeded(c).sample(population, k), s["result"].get<std::vector<int>>()) << "n=" << n << " k=" << k;
    }
  }
  EXPECT_GT(pool_cases, 50);
  EXPECT_GT(set_cases, 50);
}

TEST(PythonRandom, CoreShuffleAndFewshot) {
  Json golden = load_golden();
  for (const auto& c : golden["core"]) {
    size_t n = c["n"].get<size_t>(), k = c["k"].get<size_t>();
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    PythonRandom(1337).shuffle(order);
    EXPECT_EQ(order, c["shuffle1337"].get<std::vector<int>>()) << "n=" << n;
    for (const auto& p : c["picks"]) {
      int idx = p["idx"].get<int>();
      std::vector<int> available;
      for (int i = 0; i < static_cast<int>(n); ++i)
        if (i != idx) available.push_back(i);
      EXPECT_EQ(PythonRandom(1234 + idx).sample(available, k), p["fewshot"].get<std::vector<int>>())
          << "n=" << n << " idx=" << idx;
    }
  }
}

TEST(PythonRandom, SeedsOfEitherSignAndWidthAgree) {
  // int64 and decimal constructors, abs() of negatives, and leading zero words all seed alike.
  EXPECT_EQ(PythonRandom(-5).next_uint32(), PythonRandom(5).next_uint32());
  EXPECT_EQ(PythonRandom(1337).next_uint32(), PythonRandom::from_decimal("1337").next_uint32());
  EXPECT_EQ(PythonRandom::from_words({7, 0, 0}).next_uint32(), PythonRandom(7).next_uint32());
  EXPECT_EQ(PythonRandom(INT64_MIN).next_uint32(), PythonRandom::from_decimal("9223372036854775808").next_uint32());
  EXPECT_THROW(PythonRandom::from_decimal("12a"), Error);
  EXPECT_THROW(PythonRandom::from_decimal(""), Error);
  PythonRandom r(1);
  EXPECT_THROW(r.sample(std::vector<int>{1, 2}, 3), Error);
  EXPECT_THROW(r.randbelow(0), Error);
}

}  // namespace
}  // namespace ct
