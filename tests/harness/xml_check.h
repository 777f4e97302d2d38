#pragma once
// A strict well-formedness check for the report's XHTML-compatible HTML and SVG: the system
// python3's XML parser (expat), which refuses any unclosed tag, bad entity or invalid character.
#include <string>

#include "test_support.h"
#include "util/files.h"

namespace ct::test {

// "" when `text` is well-formed XML, else the parser's message.
inline std::string xml_problem(const std::string& text) {
  TempDir dir;
  write_file_atomic(dir / "page.xml", text);
  auto result = run_command(python() + " -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' " +
                            (dir / "page.xml").string());
  return result.exit_code == 0 ? "" : result.output;
}

}  // namespace ct::test
