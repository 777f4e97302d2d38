#pragma once
// The pre-tokenizer: splits text into chunks exactly as Python's `regex` module splits it with
// findall and the split pattern of docs/formats.md (GPT-4 style, numbers of 1 or 2 digits):
//
//   '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+
//
// Hand-written (no regex engine); pretokenizer.cpp gives the reasoning alternative by alternative.
// Character classes: \p{L} and \p{N} are the Unicode general categories L* and N* (from utf8proc,
// which has the same Unicode 15 tables as the `regex` module); \s is the Unicode White_Space set that
// `regex` uses (\t \n \v \f \r, space, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029,
// U+202F, U+205F, U+3000). The case-insensitive contraction alternative matches what `regex` matches
// with simple case folding: s/d/m/t/l/v/e/r in either case, plus U+017F (long s) for s.
//
// Bytes that are not valid UTF-8 are taken one by one, as Python sees them after
// bytes.decode("utf-8", errors="surrogateescape"): each invalid byte is one code point (a lone
// surrogate U+DC80..U+DCFF) that is neither a letter, a number nor a space. Validity follows Python's
// strict decoder: no overlong forms, no encoded surrogates (ED A0..BF), nothing above U+10FFFF.
// Every byte of the input lands in exactly one chunk, in order, so the chunks concatenate back to
// the input.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ct {

// The split pattern, as written into tokenizer.json.
inline constexpr std::string_view kSplitPattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";

namespace pretokenizer_detail {
// Length in bytes of the chunk that starts at `begin` (begin < end); at least 1.
size_t next_chunk_length(const uint8_t* begin, const uint8_t* end);
}  // namespace pretokenizer_detail

// Calls on_chunk(std::string_view) for every chunk of `text`, in order.
template <typename OnChunk>
void pretokenize(std::string_view text, OnChunk&& on_chunk) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    size_t length = pretokenizer_detail::next_chunk_length(p, end);
    on_chunk(std::string_view(reinterpret_cast<const char*>(p), length));
    p += length;
  }
}

std::vector<std::string_view> pretokenize(std::string_view text);

// Number of code points in `text`, counting each invalid byte as one (as surrogateescape does).
size_t count_code_points(std::string_view text);
// The longest prefix of `text` holding at most `max_code_points` code points (same counting).
std::string_view prefix_of_code_points(std::string_view text, size_t max_code_points);

}  // namespace ct
