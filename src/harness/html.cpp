#include "harness/html.h"

#include <cstdint>

namespace ct {

namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence at text[i] and its code point; 0 when malformed.
size_t utf8_sequence(std::string_view text, size_t i, uint32_t& code_point) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char b0 = byte(i);
  size_t length;
  uint32_t min_value;
  if (b0 < 0x80) {
    code_point = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    length = 2, code_point = b0 & 0x1F, min_value = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    length = 3, code_point = b0 & 0x0F, min_value = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    length = 4, code_point = b0 & 0x07, min_value = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (code_point < min_value || (code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF) return 0;
  return length;
}

bool allowed_in_xml(uint32_t cp) {
  if (cp < 0x20) return cp == 0x9 || cp == 0xA || cp == 0xD;
  if (cp == 0x7F) return false;  // allowed by XML, but never wanted in a page
  return cp != 0xFFFE && cp != 0xFFFF;
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cp = 0;
    size_t length = utf8_sequence(text, i, cp);
    if (length == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (!allowed_in_xml(cp)) {
      out += kReplacement;
    } else if (length == 1) {
      switch (text[i]) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += text[i];
      }
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace ct
