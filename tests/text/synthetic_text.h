#pragma once
// Deterministic text for tokenizer tests: English-like words drawn with a Zipf-like law (so BPE
// has frequent pairs to find), numbers, punctuation, line breaks, and some non-ASCII text, plus
// random byte strings and random Unicode for the property tests.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ct::test {

inline std::string synthetic_document(std::mt19937& rng, size_t approx_bytes) {
  static const std::vector<std::string> syllables = {
      "the", "an", "in", "er", "on", "re", "at", "en", "ed", "ing", "to", "of", "and", "is", "it", "ou",
      "st", "ar", "or", "al", "le", "th", "ve", "co", "pro", "ment", "tion", "ly", "ness", "ab", "qu", "x"};
  static const std::vector<std::string> extras = {"café", "naïve", "日本語", "中文", "مرحبا", "Ωmega", "😀", "ſ",
                                                  "e\xcc\x81", "١٢٣"};
  static const std::vector<std::string> punct = {".", ",", "!", "?", ";", ":", " -", "'s", "'ll", "'T", "\"", "...",
                                                 "(", ")"};
  std::vector<std::string> lexicon;
  std::mt19937 lex_rng(1234);  // the same words in every document
  for (int i = 0; i < 400; ++i) {
    std::string w;
    int n = 1 + lex_rng() % 4;
    for (int k = 0; k < n; ++k) w += syllables[lex_rng() % syllables.size()];
    if (lex_rng() % 7 == 0) w[0] = static_cast<char>(w[0] - 32);
    lexicon.push_back(w);
  }
  std::string doc;
  while (doc.size() < approx_bytes) {
    const uint32_t r = rng() % 100;
    // Zipf-like: index ~ floor(400^u) - 1.
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    const size_t index = static_cast<size_t>(std::pow(400.0, u)) - 1;
    if (r < 78) doc += (doc.empty() ? "" : " ") + lexicon[index % lexicon.size()];
    else if (r < 88) doc += punct[rng() % punct.size()];
    else if (r < 92) doc += " " + std::to_string(rng() % 100000);
    else if (r < 96) doc += (rng() % 3 == 0) ? "\n\n" : "\n";
    else if (r < 98) doc += " " + extras[rng() % extras.size()];
    else doc += std::string(1 + rng() % 4, rng() % 2 ? ' ' : '\t');
  }
  return doc;
}

inline std::vector<std::string> synthetic_corpus(uint32_t seed, int documents, size_t bytes_per_document) {
  std::mt19937 rng(seed);
  std::vector<std::string> docs;
  for (int i = 0; i < documents; ++i) docs.push_back(synthetic_document(rng, bytes_per_document));
  return docs;
}

inline std::string random_bytes(std::mt19937& rng, size_t max_length) {
  std::string s(rng() % (max_length + 1), '\0');
  for (char& c : s) c = static_cast<char>(rng() % 4 ? rng() % 128 : rng() % 256);
  return s;
}

inline void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Random valid UTF-8 (no surrogates), mostly ASCII and common scripts, some astral code points.
inline std::string random_unicode(std::mt19937& rng, size_t max_code_points) {
  std::string s;
  const size_t n = rng() % (max_code_points + 1);
  for (size_t i = 0; i < n; ++i) {
    uint32_t cp;
    switch (rng() % 6) {
      case 0: case 1: cp = 0x20 + rng() % 0x5F; break;          // printable ASCII
      case 2: cp = rng() % 0x20; break;                         // controls and white space
      case 3: cp = 0x80 + rng() % (0x800 - 0x80); break;        // Latin, Greek, Cyrillic, ...
      case 4: cp = 0x800 + rng() % (0xD800 - 0x800); break;     // the rest of the BMP below surrogates
      default: cp = 0x10000 + rng() % (0x110000 - 0x10000); break;
    }
    append_utf8(s, cp);
  }
  return s;
}

}  // namespace ct::test
