#pragma once
// Enums read from text by name (recipe fields, command-line options): the one place that lists an
// enum's names in an error and finds the value a name stands for.
#include <iterator>
#include <string>

#include "util/error.h"

namespace ct {

// Every value's name as an error lists what it expected: "\"a\"", "\"a\" or \"b\"",
// "\"a\", \"b\" or \"c\"".
template <typename Values, typename NameOf>
std::string enum_choices(const Values& values, NameOf name_of) {
  const size_t count = std::size(values);
  std::string text;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) text += i + 1 == count ? " or " : ", ";
    text += '"';
    text += name_of(values[i]);
    text += '"';
  }
  return text;
}

// The value named `text`; any other text is a ct::Error naming `where`, the names and the text.
template <typename Values, typename NameOf>
auto parse_enum(const Values& values, NameOf name_of, const std::string& text, const std::string& where) {
  for (const auto& value : values)
    if (text == name_of(value)) return value;
  fail(where, ": expected ", enum_choices(values, name_of), ", got \"", text, "\"");
}

}  // namespace ct
