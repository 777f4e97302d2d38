#include "util/read_guard.h"

#include <algorithm>

#include "util/error.h"

namespace ct {

namespace fs = std::filesystem;

fs::path canonical_for_guard(const fs::path& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  fs::path resolved = fs::weakly_canonical(absolute, ec);
  if (ec) resolved = absolute.lexically_normal();
  // "/a/b/" -> "/a/b": a trailing separator leaves an empty last component.
  if (!resolved.empty() && resolved.filename().empty() && resolved != resolved.root_path())
    resolved = resolved.parent_path();
  return resolved;
}

bool path_is_under(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // trailing separator of the root
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

void ReadGuard::forbid_pinned_evaluation_data(const DataLayout& data) {
  forbid(data.val(), "the pinned validation set, which only the evaluator reads");
  forbid(data.eval_bundle(), "the CORE eval bundle, which only the evaluator reads");
}

void ReadGuard::forbid(const fs::path& root, const std::string& reason) {
  std::lock_guard lock(mutex_);
  forbidden_.push_back({canonical_for_guard(root), reason});
}

void ReadGuard::allow(const fs::path& root) {
  std::lock_guard lock(mutex_);
  allowed_.push_back(canonical_for_guard(root));
}

fs::path ReadGuard::admit(const fs::path& path) {
  fs::path resolved = canonical_for_guard(path);
  std::lock_guard lock(mutex_);
  for (const auto& root : forbidden_) {
    if (path_is_under(resolved, root.path)) {
      refused_.push_back(resolved.string());
      fail(path.string(), ": refused: it lies under ", root.path.string(), " (", root.reason, ")");
    }
  }
  if (!allowed_.empty()) {
    bool inside = std::any_of(allowed_.begin(), allowed_.end(),
                              [&](const fs::path& root) { return path_is_under(resolved, root); });
    if (!inside) {
      refused_.push_back(resolved.string());
      std::string roots;
      for (const auto& root : allowed_) roots += (roots.empty() ? "" : ", ") + root.string();
      fail(path.string(), ": refused: outside the folders this stage may read (", roots, ")");
    }
  }
  std::string key = resolved.string();
  if (std::find(opened_.begin(), opened_.end(), key) == opened_.end()) opened_.push_back(key);
  return resolved;
}

std::vector<std::string> ReadGuard::opened() const {
  std::lock_guard lock(mutex_);
  return opened_;
}

std::vector<std::string> ReadGuard::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

std::vector<ReadGuard::Root> ReadGuard::forbidden_roots() const {
  std::lock_guard lock(mutex_);
  return forbidden_;
}

std::vector<fs::path> ReadGuard::allowed_roots() const {
  std::lock_guard lock(mutex_);
  return allowed_;
}

}  // namespace ct
