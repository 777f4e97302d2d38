#include "util/python_text.h"

#include <cstdint>

namespace ct {

bool python_isspace(char32_t c) {
  // The full list for CPython 3.11 (chars with bidirectional type WS, B or S, or category Zs).
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D:
    case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x20:
    case 0x85: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

namespace {

// Decodes the well-formed UTF-8 sequence at s[pos] (length 1-4); returns its length, or 0 when the
// bytes there are not one well-formed code point.
size_t decode_utf8(std::string_view s, size_t pos, char32_t& out) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  uint8_t b0 = byte(pos);
  size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || pos + len > s.size()) return 0;
  char32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t i = 1; i < len; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (byte(pos + i) & 0x3F);
  }
  out = c;
  return len;
}

}  // namespace

std::string_view python_strip(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size()) {
    char32_t c;
    size_t len = decode_utf8(text, begin, c);
    if (len == 0 || !python_isspace(c)) break;
    begin += len;
  }
  size_t end = text.size();
  while (end > begin) {
    // Step back to the start of the last code point (at most 4 bytes).
    size_t start = end - 1;
    while (start > begin && end - start < 4 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    char32_t c;
    size_t len = decode_utf8(text, start, c);
    if (len != end - start || !python_isspace(c)) break;
    end = start;
  }
  return text.substr(begin, end - begin);
}

}  // namespace ct
