#pragma once
// Parquet corpus files (docs/data.md, "Parquet"): one document per row, its text the string column
// named `column` (default "text"), read with Apache Arrow's C++ Parquet library one row group at a
// time, so that memory holds one row group's texts and never the whole file. Page CRCs are checked
// where the file has them. Errors name the file, and the row or row group: a missing column, a
// column that is not text, a null text, a corrupt footer or page, a row group that needs more memory
// than the reader's budget (which a forged page header can claim in a file of a few hundred bytes).
//
// A build without Arrow (cmake/Parquet.cmake found neither libparquet-dev nor pyarrow) still has
// this class: opening any file is then an error that says how to get Parquet support.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace ct {

inline constexpr const char* kDefaultTextColumn = "text";
// The most memory one reader holds at once (one row group's text column: the compressed pages, the
// decompressed ones and the strings). Real corpus files have row groups of a few to a few hundred MB.
inline constexpr uint64_t kDefaultParquetMemoryBudget = uint64_t{2} << 30;

// True when this build reads Parquet.
bool parquet_supported();

// *.parquet
bool is_parquet_file(const std::filesystem::path& path);

class ParquetTextReader {
 public:
  // Opens a file and checks the column (it exists, is a top-level string column).
  // `memory_budget`: the most bytes Arrow may hold for this reader; a row group that needs more is
  // an error naming it.
  ParquetTextReader(const std::filesystem::path& path, const std::string& column = kDefaultTextColumn,
                    uint64_t memory_budget = kDefaultParquetMemoryBudget);
  // The same from bytes in memory (the fuzzer); `name` stands for the file in messages.
  static ParquetTextReader from_bytes(std::string bytes, const std::string& name,
                                      const std::string& column = kDefaultTextColumn,
                                      uint64_t memory_budget = kDefaultParquetMemoryBudget);
  ~ParquetTextReader();
  ParquetTextReader(ParquetTextReader&&) noexcept;
  ParquetTextReader& operator=(ParquetTextReader&&) noexcept;

  // The next row's text; false after the last row.
  bool next(std::string& text);
  // 1-based number of the row next() returned last.
  int64_t row_number() const;
  // Rows in the file (from its footer).
  int64_t rows() const;
  // Compressed bytes of the text column in the row groups read so far (progress).
  uint64_t file_bytes_consumed() const;

  struct Impl;

 private:
  explicit ParquetTextReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ct
