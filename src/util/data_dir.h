#pragma once
// Where the shipped data lives: --data, else $CLOCKTRAIN_DATA, else ../shared/data beside the
// project root (the checkout this binary was built from), else ../shared/data from the current folder.
#include <filesystem>
#include <string>

namespace ct {

std::filesystem::path resolve_data_dir(const std::string& option_value);

// The standard places inside a data folder (see ../shared/data/README.md).
struct DataLayout {
  std::filesystem::path root;
  std::filesystem::path corpus() const { return root / "corpus"; }
  std::filesystem::path val() const { return root / "val"; }
  std::filesystem::path eval_bundle() const { return root / "eval_bundle"; }
};

}  // namespace ct
