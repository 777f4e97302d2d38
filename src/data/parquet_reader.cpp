#include "data/parquet_reader.h"

#include "util/error.h"

#if CLOCKTRAIN_HAVE_PARQUET
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/schema.h>
#endif

namespace ct {

bool is_parquet_file(const std::filesystem::path& path) { return path.extension() == ".parquet"; }

#if CLOCKTRAIN_HAVE_PARQUET

bool parquet_supported() { return true; }

struct ParquetTextReader::Impl {
  std::string name, column;
  std::unique_ptr<parquet::arrow::FileReader> reader;
  std::shared_ptr<parquet::FileMetaData> metadata;
  int leaf = -1;  // the column's index among the file's leaf columns
  int next_group = 0;
  std::shared_ptr<arrow::ChunkedArray> texts;  // the current row group's column
  int chunk = 0;
  int64_t in_chunk = 0;
  int64_t row = 0;
  uint64_t consumed = 0;

  // Arrow reports through Status or by throwing ParquetException; both become ct::Error naming the file.
  void ok(const arrow::Status& status, const std::string& what) const {
    check(status.ok(), name, ": ", what, ": ", status.ToString());
  }

  void open(std::shared_ptr<arrow::io::RandomAccessFile> file) {
    // The system allocator (not the wheel's jemalloc/mimalloc) so that the sanitizers see the buffers.
    arrow::MemoryPool* pool = arrow::system_memory_pool();
    parquet::ReaderProperties properties(pool);
    // Files that carry page CRCs are checked: a page whose bytes do not match is an error, not text.
    properties.set_page_checksum_verification(true);
    parquet::arrow::FileReaderBuilder builder;
    try {
      ok(builder.Open(std::move(file), properties), "not a readable Parquet file");
      ok(builder.memory_pool(pool)->Build(&reader), "not a readable Parquet file");
    } catch (const std::exception& e) {
      fail(name, ": not a readable Parquet file: ", e.what());
    }
    metadata = reader->parquet_reader()->metadata();
    const parquet::SchemaDescriptor* schema = metadata->schema();
    leaf = schema->ColumnIndex(column);
    if (leaf < 0) {
      std::string names;
      for (int i = 0; i < schema->num_columns(); ++i) names += (i ? ", " : "") + schema->Column(i)->path()->ToDotString();
      fail(name, ": no column \"", column, "\" (the file's columns: ", names, ")");
    }
    const parquet::ColumnDescriptor* descriptor = schema->Column(leaf);
    check(descriptor->physical_type() == parquet::Type::BYTE_ARRAY, name, ": column \"", column,
          "\": expected a string (BYTE_ARRAY) column, got ", parquet::TypeToString(descriptor->physical_type()));
    check(descriptor->max_repetition_level() == 0, name, ": column \"", column,
          "\": expected one string per row, got a repeated column");
  }

  bool load_next_group() {
    if (next_group >= reader->num_row_groups()) return false;
    const int group = next_group++;
    std::shared_ptr<arrow::Table> table;
    const std::string what = str("row group ", group, " (rows from ", row + 1, ")");
    try {
      ok(reader->ReadRowGroup(group, {leaf}, &table), what);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail(name, ": ", what, ": ", e.what());
    }
    texts = table->column(0);
    chunk = 0;
    in_chunk = 0;
    consumed += static_cast<uint64_t>(metadata->RowGroup(group)->ColumnChunk(leaf)->total_compressed_size());
    return true;
  }

  template <typename Array>
  bool take(const arrow::Array& array, std::string& text) {
    const auto& typed = static_cast<const Array&>(array);
    const auto view = typed.GetView(in_chunk);
    text.assign(view.data(), view.size());
    return true;
  }

  bool next(std::string& text) {
    while (true) {
      if (texts && chunk < texts->num_chunks()) {
        const arrow::Array& array = *texts->chunk(chunk);
        if (in_chunk >= array.length()) {
          ++chunk;
          in_chunk = 0;
          continue;
        }
        ++row;
        check(!array.IsNull(in_chunk), name, ": row ", row, ": column \"", column, "\" is null (expected a string)");
        switch (array.type_id()) {
          case arrow::Type::STRING:
          case arrow::Type::BINARY: take<arrow::BinaryArray>(array, text); break;
          case arrow::Type::LARGE_STRING:
          case arrow::Type::LARGE_BINARY: take<arrow::LargeBinaryArray>(array, text); break;
          default: fail(name, ": column \"", column, "\": expected strings, Arrow read ", array.type()->ToString());
        }
        ++in_chunk;
        return true;
      }
      if (!load_next_group()) return false;
    }
  }
};

ParquetTextReader::ParquetTextReader(const std::filesystem::path& path, const std::string& column)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = path.string();
  impl_->column = column;
  auto file = arrow::io::ReadableFile::Open(path.string(), arrow::system_memory_pool());
  check(file.ok(), path.string(), ": cannot open for reading: ", file.status().ToString());
  impl_->open(*file);
}

ParquetTextReader ParquetTextReader::from_bytes(std::string bytes, const std::string& name, const std::string& column) {
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->column = column;
  impl->open(std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(std::move(bytes))));
  return ParquetTextReader(std::move(impl));
}

bool ParquetTextReader::next(std::string& text) { return impl_->next(text); }
int64_t ParquetTextReader::row_number() const { return impl_->row; }
int64_t ParquetTextReader::rows() const { return impl_->metadata->num_rows(); }
uint64_t ParquetTextReader::file_bytes_consumed() const { return impl_->consumed; }

#else  // Built without Arrow's Parquet library.

bool parquet_supported() { return false; }

struct ParquetTextReader::Impl {};

namespace {
[[noreturn]] void no_parquet(const std::string& name) {
  fail(name, ": a Parquet file, and this clocktrain was built without Parquet support (Apache Arrow's C++ "
       "Parquet library). Run scripts/install-pyarrow.sh (or install libparquet-dev from Apache Arrow's APT "
       "repository), then configure and build again; see docs/data.md, \"Parquet\"");
}
}  // namespace

ParquetTextReader::ParquetTextReader(const std::filesystem::path& path, const std::string&) { no_parquet(path.string()); }
ParquetTextReader ParquetTextReader::from_bytes(std::string, const std::string& name, const std::string&) {
  no_parquet(name);
}
bool ParquetTextReader::next(std::string&) { return false; }
int64_t ParquetTextReader::row_number() const { return 0; }
int64_t ParquetTextReader::rows() const { return 0; }
uint64_t ParquetTextReader::file_bytes_consumed() const { return 0; }

#endif

ParquetTextReader::ParquetTextReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParquetTextReader::~ParquetTextReader() = default;
ParquetTextReader::ParquetTextReader(ParquetTextReader&&) noexcept = default;
ParquetTextReader& ParquetTextReader::operator=(ParquetTextReader&&) noexcept = default;

}  // namespace ct
