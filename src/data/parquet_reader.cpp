#include "data/parquet_reader.h"

#include <algorithm>
#include <atomic>

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

namespace {

constexpr const char* kParquetBudgetAdvice = "write the file with smaller row groups, e.g. pyarrow's row_group_size";

// Every buffer Arrow allocates for one reader (file reads, decompressed pages, the column's strings)
// goes through this pool, which refuses a request that would take the bytes held past `budget`.
// A page header is only a claim: a file of a few hundred bytes can declare a page of gigabytes, and
// Arrow allocates what the header says before it decompresses. Refusing here turns that into an
// error (Arrow's OutOfMemory status) instead of an allocation the machine cannot make.
// Allocation itself is the system allocator's (not the wheel's jemalloc/mimalloc), so that the
// sanitizers see the buffers.
class BudgetedPool final : public arrow::MemoryPool {
 public:
  explicit BudgetedPool(uint64_t budget) : budget_(static_cast<int64_t>(budget)) {}

  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    ARROW_RETURN_NOT_OK(admit(size));
    arrow::Status status = base_->Allocate(size, alignment, out);
    if (status.ok()) held_ += size;
    return status;
  }
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment, uint8_t** ptr) override {
    if (new_size > old_size) ARROW_RETURN_NOT_OK(admit(new_size - old_size));
    arrow::Status status = base_->Reallocate(old_size, new_size, alignment, ptr);
    if (status.ok()) held_ += new_size - old_size;
    return status;
  }
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override {
    base_->Free(buffer, size, alignment);
    held_ -= size;
  }
  int64_t bytes_allocated() const override { return held_; }
  int64_t total_bytes_allocated() const override { return base_->total_bytes_allocated(); }
  int64_t num_allocations() const override { return base_->num_allocations(); }
  std::string backend_name() const override { return base_->backend_name(); }

  uint64_t budget() const { return static_cast<uint64_t>(budget_); }
  // The largest request refused so far (0: none).
  uint64_t refused() const { return static_cast<uint64_t>(refused_); }

 private:
  // Atomic counts: Arrow may free a buffer on one of its own threads. (The check and the count are
  // two steps; the reader reads on one thread, so two admissions never race.)
  arrow::Status admit(int64_t more) {
    const int64_t held = held_.load();
    if (more >= 0 && held <= budget_ && more <= budget_ - held) return arrow::Status::OK();
    int64_t seen = refused_.load();
    while (more > seen && !refused_.compare_exchange_weak(seen, more)) {
    }
    return arrow::Status::OutOfMemory("a request for ", more, " bytes with ", held,
                                      " held would pass the reader's budget of ", budget_, " bytes");
  }

  arrow::MemoryPool* base_ = arrow::system_memory_pool();
  int64_t budget_;
  std::atomic<int64_t> held_{0};
  std::atomic<int64_t> refused_{0};
};

}  // namespace

struct ParquetTextReader::Impl {
  explicit Impl(uint64_t memory_budget) : pool(memory_budget) {}

  // Declared first, destroyed last: the reader and the arrays below hand their buffers back to it.
  BudgetedPool pool;
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

  // Arrow reports through Status or by throwing ParquetException; both become ct::Error naming the file,
  // and a failure after the pool refused a request is the budget's error, whatever Arrow made of it.
  void ok(const arrow::Status& status, const std::string& what) const {
    if (!status.ok()) arrow_failed(what, status.ToString());
  }
  [[noreturn]] void arrow_failed(const std::string& what, const std::string& message) const {
    if (pool.refused() > 0)
      fail(name, ": ", what, ": needs more than the reader's ", pool.budget(), "-byte memory budget (a request for ",
           pool.refused(), " bytes was refused; a page header may claim more than the file holds, or a row group ",
           "is too big: ", kParquetBudgetAdvice, ")");
    fail(name, ": ", what, ": ", message);
  }

  void open(std::shared_ptr<arrow::io::RandomAccessFile> file) {
    parquet::ReaderProperties properties(&pool);
    // Files that carry page CRCs are checked: a page whose bytes do not match is an error, not text.
    properties.set_page_checksum_verification(true);
    // Reads happen on this thread, in order: no pre-buffering, whose reads run ahead on Arrow's I/O
    // threads and can finish after this reader (and its pool) is gone when a read fails.
    parquet::ArrowReaderProperties arrow_properties(/*use_threads=*/false);
    arrow_properties.set_pre_buffer(false);
    parquet::arrow::FileReaderBuilder builder;
    try {
      ok(builder.Open(std::move(file), properties), "not a readable Parquet file");
      ok(builder.memory_pool(&pool)->properties(arrow_properties)->Build(&reader), "not a readable Parquet file");
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      arrow_failed("not a readable Parquet file", e.what());
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
    texts.reset();  // the previous group's strings (all read by now) leave the budget before the next group
    std::shared_ptr<arrow::Table> table;
    const std::string what = str("row group ", group, " (rows from ", row + 1, ")");
    int64_t compressed = 0;
    try {
      // The footer's own size of the column, checked before anything is read; the pages' headers,
      // which may claim otherwise, meet the pool's budget as they are read. (The footer's column
      // metadata is parsed here, so a malformed one throws here too.)
      const auto chunk_metadata = metadata->RowGroup(group)->ColumnChunk(leaf);
      const int64_t declared = chunk_metadata->total_uncompressed_size();
      compressed = chunk_metadata->total_compressed_size();
      check(declared >= 0 && static_cast<uint64_t>(declared) <= pool.budget(), name, ": ", what, ": column \"",
            column, "\" declares ", declared, " bytes uncompressed, more than the reader's ", pool.budget(),
            "-byte memory budget (", kParquetBudgetAdvice, ")");
      ok(reader->ReadRowGroup(group, {leaf}, &table), what);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      arrow_failed(what, e.what());
    }
    texts = table->column(0);
    chunk = 0;
    in_chunk = 0;
    consumed += static_cast<uint64_t>(std::max<int64_t>(compressed, 0));
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

ParquetTextReader::ParquetTextReader(const std::filesystem::path& path, const std::string& column,
                                     uint64_t memory_budget)
    : impl_(std::make_unique<Impl>(memory_budget)) {
  impl_->name = path.string();
  impl_->column = column;
  auto file = arrow::io::ReadableFile::Open(path.string(), &impl_->pool);
  check(file.ok(), path.string(), ": cannot open for reading: ", file.status().ToString());
  impl_->open(*file);
}

ParquetTextReader ParquetTextReader::from_bytes(std::string bytes, const std::string& name, const std::string& column,
                                                uint64_t memory_budget) {
  auto impl = std::make_unique<Impl>(memory_budget);
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

ParquetTextReader::ParquetTextReader(const std::filesystem::path& path, const std::string&, uint64_t) {
  no_parquet(path.string());
}
ParquetTextReader ParquetTextReader::from_bytes(std::string, const std::string& name, const std::string&, uint64_t) {
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
