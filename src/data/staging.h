#pragma once
// A staging folder inside an output folder: outputs are written there under their final names and
// moved into the output folder only by commit(), the manifest last. Until then the output folder is
// untouched; an abandoned staging folder (an error, or a crash) is removed.
#include <filesystem>
#include <string>
#include <vector>

namespace ct {

class StagingFolder {
 public:
  explicit StagingFolder(std::filesystem::path out_dir);
  ~StagingFolder();  // removes the staging folder unless committed
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;

  const std::filesystem::path& path() const { return staging_; }
  // Renames each named file from the staging folder into the output folder, in order (so the
  // manifest goes last), then removes the folder.
  void commit(const std::vector<std::string>& names_in_order);

 private:
  std::filesystem::path out_dir_, staging_;
  bool committed_ = false;
};

}  // namespace ct
