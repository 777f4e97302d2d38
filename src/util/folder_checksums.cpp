#include "util/folder_checksums.h"

#include <functional>

#include "util/error.h"
#include "util/files.h"
#include "util/sha256.h"

namespace ct {

namespace {

constexpr size_t kHexDigits = 64;
constexpr std::string_view kSeparator = "  ";  // sha256sum's text mode; " *" (binary mode) is not written here

bool is_lowercase_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Why `name` cannot be a line's file name, or "" when it can. Control characters are refused because
// sha256sum escapes a name holding a newline or backslash with a leading '\', which this format
// does not write; '/' because every name is a file of the folder itself.
std::string name_problem(std::string_view name) {
  if (name.empty()) return "no file name after the hash";
  if (name == "." || name == "..") return str("'", name, "' is not a file name");
  if (name == kChecksumsFile) return str(kChecksumsFile, " cannot list itself");
  for (char c : name) {
    if (c == '/') return str("'", name, "' is not a plain file name (it holds '/')");
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\')
      return "the file name holds a control character or a backslash";
  }
  return "";
}

}  // namespace

std::string folder_checksums_text(const FolderChecksums& checksums) {
  std::string text;
  for (const auto& [name, sha256] : checksums) {
    const std::string problem = name_problem(name);
    check(problem.empty(), kChecksumsFile, ": cannot list '", name, "': ", problem);
    check(sha256.size() == kHexDigits && is_lowercase_hex(sha256), kChecksumsFile, ": '", name,
          "': expected a SHA-256 of 64 lowercase hex digits, got '", sha256, "'");
    text += sha256;
    text += kSeparator;
    text += name;
    text += '\n';
  }
  return text;
}

FolderChecksums parse_folder_checksums(std::string_view text, const std::string& where) {
  FolderChecksums out;
  std::map<std::string, size_t, std::less<>> first_line;
  size_t begin = 0;
  for (size_t line_number = 1; begin < text.size(); ++line_number) {
    const size_t end = text.find('\n', begin);
    check(end != std::string_view::npos, where, ":", line_number, ": expected a newline at the end of the line");
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    const std::string_view shown = line.substr(0, 100);
    check(line.size() >= kHexDigits && is_lowercase_hex(line.substr(0, kHexDigits)), where, ":", line_number,
          ": expected '<64 lowercase hex digits>  <file name>', got '", shown, "'");
    check(line.substr(kHexDigits, kSeparator.size()) == kSeparator, where, ":", line_number,
          ": expected two spaces between the hash and the file name, got '", shown, "'");
    const std::string name(line.substr(kHexDigits + kSeparator.size()));
    const std::string problem = name_problem(name);
    check(problem.empty(), where, ":", line_number, ": ", problem);
    const auto [previous, inserted] = first_line.emplace(name, line_number);
    check(inserted, where, ":", line_number, ": '", name, "' is listed twice (first on line ", previous->second, ")");
    out[name] = std::string(line.substr(0, kHexDigits));
  }
  return out;
}

void write_folder_checksums(const std::filesystem::path& dir) {
  FolderChecksums checksums;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kChecksumsFile) continue;
    std::error_code type_error;
    check(it->is_regular_file(type_error), it->path().string(), ": not a regular file (", kChecksumsFile,
          " lists files only)");
    checksums[name] = sha256_file(it->path());
  }
  check(!ec, dir.string(), ": cannot list the folder: ", ec.message());
  write_file_atomic(dir / kChecksumsFile, folder_checksums_text(checksums));
}

std::string verify_file_checksum(const std::filesystem::path& file) {
  const std::string actual = sha256_file(file);  // first: a missing file is named as such
  const std::filesystem::path sums_path = file.parent_path() / kChecksumsFile;
  std::error_code ec;
  if (!std::filesystem::exists(sums_path, ec)) return actual;
  const FolderChecksums checksums = parse_folder_checksums(read_file(sums_path), sums_path.string());
  const std::string name = file.filename().string();
  const auto listed = checksums.find(name);
  check(listed != checksums.end(), sums_path.string(), ": does not list ", name,
        " (every file of the folder is listed when it is written)");
  check(actual == listed->second, file.string(), ": SHA-256 ", actual, " differs from ", listed->second,
        " recorded in ", sums_path.string(), ": the file changed after it was written (damaged or edited)");
  return actual;
}

}  // namespace ct
