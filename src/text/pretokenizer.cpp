#include "text/pretokenizer.h"

#include <utf8proc.h>

#include <array>

namespace ct {
namespace pretokenizer_detail {
namespace {

enum CharClass : uint8_t { kLetter = 0, kNumber = 1, kSpace = 2, kOther = 3 };

struct CodePoint {
  uint32_t length;  // bytes
  CharClass cls;
};

bool is_white_space(uint32_t c) {
  // The Unicode White_Space property, which is what `regex` matches with \s.
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

CharClass classify(uint32_t c) {
  if (is_white_space(c)) return kSpace;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return kLetter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return kNumber;
    default:
      return kOther;
  }
}

// Classes of the Basic Multilingual Plane, computed once (64 KiB): most text never leaves it.
struct BmpClasses {
  std::array<uint8_t, 0x10000> cls;
  BmpClasses() {
    for (uint32_t c = 0; c < 0x10000; ++c) cls[c] = classify(c);
  }
};

const BmpClasses& bmp_classes() {
  static const BmpClasses table;
  return table;
}

CharClass class_of(uint32_t c) {
  return c < 0x10000 ? static_cast<CharClass>(bmp_classes().cls[c]) : classify(c);
}

inline bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Decodes one code point the way Python's strict UTF-8 decoder accepts it (Unicode Table 3-7);
// anything else is one invalid byte, class kOther.
CodePoint decode_non_ascii(const uint8_t* p, const uint8_t* end) {
  const uint8_t b0 = p[0];
  const ptrdiff_t left = end - p;
  constexpr CodePoint kInvalid{1, kOther};
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (left < 2 || !is_continuation(p[1])) return kInvalid;
    return {2, class_of(((b0 & 0x1Fu) << 6) | (p[1] & 0x3Fu))};
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (left < 3) return kInvalid;
    const uint8_t lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    if (p[1] < lo || p[1] > hi || !is_continuation(p[2])) return kInvalid;
    return {3, class_of(((b0 & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu))};
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (left < 4) return kInvalid;
    const uint8_t lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (p[1] < lo || p[1] > hi || !is_continuation(p[2]) || !is_continuation(p[3])) return kInvalid;
    return {4, class_of(((b0 & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) |
                        (p[3] & 0x3Fu))};
  }
  return kInvalid;
}

constexpr std::array<uint8_t, 128> make_ascii_classes() {
  std::array<uint8_t, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) t[c] = kLetter;
    else if (c >= '0' && c <= '9') t[c] = kNumber;
    else if ((c >= 0x09 && c <= 0x0D) || c == ' ') t[c] = kSpace;
    else t[c] = kOther;
  }
  return t;
}
constexpr std::array<uint8_t, 128> kAsciiClasses = make_ascii_classes();

inline CodePoint at(const uint8_t* p, const uint8_t* end) {
  if (*p < 0x80) return {1, static_cast<CharClass>(kAsciiClasses[*p])};
  return decode_non_ascii(p, end);
}

inline bool is_cr_or_lf(uint8_t b) { return b == '\r' || b == '\n'; }

// \p{L}+ from p (p is at a letter); returns the end of the run.
inline const uint8_t* skip_letters(const uint8_t* p, const uint8_t* end) {
  while (p < end) {
    if (*p < 0x80) {
      if (kAsciiClasses[*p] != kLetter) break;
      ++p;
      continue;
    }
    CodePoint c = decode_non_ascii(p, end);
    if (c.cls != kLetter) break;
    p += c.length;
  }
  return p;
}

inline uint8_t ascii_lower(uint8_t b) { return (b >= 'A' && b <= 'Z') ? b + 32 : b; }

// Alternative 1, '(?i:[sdmt]|ll|ve|re): the length matched at p (which holds '\''), or 0.
inline size_t match_contraction(const uint8_t* p, const uint8_t* end) {
  if (end - p < 2) return 0;
  const uint8_t b1 = ascii_lower(p[1]);
  if (b1 == 's' || b1 == 'd' || b1 == 'm' || b1 == 't') return 2;
  if (end - p >= 3 && p[1] == 0xC5 && p[2] == 0xBF) return 3;  // U+017F folds to s
  if (end - p < 3) return 0;
  const uint8_t b2 = ascii_lower(p[2]);
  if ((b1 == 'l' && b2 == 'l') || (b1 == 'v' && b2 == 'e') || (b1 == 'r' && b2 == 'e')) return 3;
  return 0;
}

}  // namespace

size_t next_chunk_length(const uint8_t* const begin, const uint8_t* const end) {
  const uint8_t* p = begin;
  const CodePoint first = at(p, end);

  // 1. '(?i:[sdmt]|ll|ve|re)
  if (*p == '\'') {
    if (size_t n = match_contraction(p, end)) return n;
  }
  // 2. [^\r\n\p{L}\p{N}]?+\p{L}+ : letters, optionally led by one character that is neither a
  //    line break, a letter nor a number. (Possessiveness never matters: without the leading
  //    character the match would have to start with a letter.)
  if (first.cls == kLetter) return skip_letters(p, end) - begin;
  if (first.cls != kNumber && !is_cr_or_lf(*p)) {
    const uint8_t* q = p + first.length;
    if (q < end && at(q, end).cls == kLetter) return skip_letters(q, end) - begin;
  }
  // 3. \p{N}{1,2}
  if (first.cls == kNumber) {
    const uint8_t* q = p + first.length;
    if (q < end) {
      CodePoint second = at(q, end);
      if (second.cls == kNumber) q += second.length;
    }
    return q - begin;
  }
  // 4.  ?[^\s\p{L}\p{N}]++[\r\n]* : an optional space, a run of "other" characters, then any
  //    line breaks. The optional space is given back when no "other" character follows it.
  {
    const uint8_t* q = p;
    if (*q == ' ' && q + 1 < end && at(q + 1, end).cls == kOther) ++q;
    if (at(q, end).cls == kOther) {
      while (q < end) {
        CodePoint c = at(q, end);
        if (c.cls != kOther) break;
        q += c.length;
      }
      while (q < end && is_cr_or_lf(*q)) ++q;
      return q - begin;
    }
  }
  // Here the first character is white space. Scan the whole run once.
  const uint8_t* run_end = p;
  const uint8_t* last_break_end = nullptr;  // just after the last \r or \n of the run
  const uint8_t* last_start = p;            // start of the run's last character
  while (run_end < end) {
    CodePoint c = at(run_end, end);
    if (c.cls != kSpace) break;
    if (is_cr_or_lf(*run_end)) last_break_end = run_end + 1;
    last_start = run_end;
    run_end += c.length;
  }
  // 5. \s*[\r\n] : greedy, so it backs off to the run's last line break.
  if (last_break_end) return last_break_end - begin;
  // 6. \s+(?!\S) : the whole run at the end of the text, else all of it but the last character
  //    (which then leads the next chunk), if that leaves at least one.
  if (run_end == end) return run_end - begin;
  if (last_start > p) return last_start - begin;
  // 7. \s+ : a single white-space character before a non-space.
  return run_end - begin;
}

}  // namespace pretokenizer_detail

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> chunks;
  pretokenize(text, [&](std::string_view chunk) { chunks.push_back(chunk); });
  return chunks;
}

size_t count_code_points(std::string_view text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const auto* end = p + text.size();
  size_t n = 0;
  for (; p < end; ++n) p += *p < 0x80 ? 1 : pretokenizer_detail::decode_non_ascii(p, end).length;
  return n;
}

std::string_view prefix_of_code_points(std::string_view text, size_t max_code_points) {
  const auto* begin = reinterpret_cast<const uint8_t*>(text.data());
  const auto* p = begin;
  const auto* end = p + text.size();
  for (size_t n = 0; n < max_code_points && p < end; ++n)
    p += *p < 0x80 ? 1 : pretokenizer_detail::decode_non_ascii(p, end).length;
  return text.substr(0, p - begin);
}

}  // namespace ct
