#pragma once
// Standard base64 (RFC 4648, alphabet A-Z a-z 0-9 + /, '=' padding), as tiktoken files use it.
#include <optional>
#include <string>
#include <string_view>

namespace ct {

std::string base64_encode(std::string_view bytes);
// The decoded bytes, or nothing when `text` is not canonical padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace ct
