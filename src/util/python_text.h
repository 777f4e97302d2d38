#pragma once
// Python's str.strip() on UTF-8 text: removes the leading and trailing code points for which
// Python's str.isspace() is true (ASCII whitespace, \x1c-\x1f, \x85, NBSP, the Unicode space
// separators, U+2028/2029). docs/eval.md's trim and strip are this operation. Invalid UTF-8 bytes count
// as non-whitespace.
#include <string_view>

namespace ct {

// True when the code point is whitespace for Python's str.isspace().
bool python_isspace(char32_t code_point);

std::string_view python_strip(std::string_view text);

}  // namespace ct
