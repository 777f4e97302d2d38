#pragma once
// Escaping for the report, which is written as XHTML-compatible HTML5 so a strict XML parser can
// check it. Every string that comes from a file (names, evidence, recipe, environment) goes
// through xml_escape: markup characters become entities, and what XML 1.0 cannot carry (control
// characters, malformed UTF-8, U+FFFE/U+FFFF) becomes U+FFFD.
#include <string>
#include <string_view>

namespace ct {

std::string xml_escape(std::string_view text);

}  // namespace ct
