#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "util/error.h"

namespace ct {

namespace json_detail {

template <typename T>
inline constexpr bool is_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T>
struct is_integer_vector : std::false_type {};
template <typename T, typename A>
struct is_integer_vector<std::vector<T, A>> : std::bool_constant<is_integer_v<T>> {};

// A JSON number as integer type T when it holds one exactly. nlohmann's get<T>() casts without a
// check: 2.5 becomes 2, 1e300 is undefined behaviour (a float cast out of range), -1 wraps to a huge
// unsigned. An integral float (4.0, as Python writes some counts) is accepted.
template <typename T>
std::optional<T> exact_integer(const Json& v) {
  using Limits = std::numeric_limits<T>;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(Limits::max())) return std::nullopt;
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < 0 ? (!Limits::is_signed || i < static_cast<int64_t>(Limits::min()))
              : static_cast<uint64_t>(i) > static_cast<uint64_t>(Limits::max()))
      return std::nullopt;
    return static_cast<T>(i);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // T's range is [-2^digits, 2^digits) for signed T and [0, 2^digits) for unsigned T, exactly.
    const double bound = std::ldexp(1.0, Limits::digits);
    if (!(d < bound && d >= (Limits::is_signed ? -bound : 0.0)) || d != std::trunc(d)) return std::nullopt;
    return static_cast<T>(d);
  }
  return std::nullopt;
}

template <typename T>
T json_value_as(const Json& v, const std::string& where, const std::string& key) {
  if constexpr (is_integer_v<T>) {
    const std::optional<T> value = exact_integer<T>(v);
    check(value.has_value(), where, ": field '", key, "': expected an integer in [", +std::numeric_limits<T>::min(),
          ", ", +std::numeric_limits<T>::max(), "], got ", v.dump().substr(0, 40));
    return *value;
  } else if constexpr (is_integer_vector<T>::value) {
    check(v.is_array(), where, ": field '", key, "': expected a list of integers");
    T out;
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const auto value = exact_integer<typename T::value_type>(v[i]);
      check(value.has_value(), where, ": field '", key, "'[", i, "]: expected an integer in [",
            +std::numeric_limits<typename T::value_type>::min(), ", ",
            +std::numeric_limits<typename T::value_type>::max(), "], got ", v[i].dump().substr(0, 40));
      out.push_back(*value);
    }
    return out;
  } else {
    try {
      return v.template get<T>();
    } catch (const nlohmann::json::exception& e) {
      fail(where, ": field '", key, "': wrong type (", e.what(), ")");
    }
  }
}

}  // namespace json_detail

template <typename T>
T json_field(const Json& j, const std::string& key, const std::string& where) {
  check(j.is_object(), where, ": expected a JSON object");
  auto it = j.find(key);
  check(it != j.end(), where, ": missing field '", key, "'");
  return json_detail::json_value_as<T>(*it, where, key);
}

template <typename T>
T json_field_or(const Json& j, const std::string& key, const T& fallback, const std::string& where) {
  check(j.is_object(), where, ": expected a JSON object");
  if (!j.contains(key)) return fallback;
  return json_field<T>(j, key, where);
}

}  // namespace ct
