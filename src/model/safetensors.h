#pragma once
// safetensors (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length, a JSON
// header {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
// padded with spaces to a multiple of 8 bytes, then the raw little-endian tensor bytes. Offsets are
// relative to the start of the data. clocktrain writes F32 (weights, optimizer state), F64 and I32.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ct {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;            // "F32", "F64", "BF16", "I32", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets within the data section
  int64_t numel() const;
};

size_t safetensors_dtype_size(const std::string& dtype);  // 0 when unknown

// A safetensors file whose header has been read and validated: every entry's dtype is known, its
// byte size matches its shape, offsets lie within the file and do not overlap. Data is read on demand.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(std::filesystem::path path);
  const std::filesystem::path& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // in data order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsEntry* find(const std::string& name) const;
  // The entry, checked: present, of this dtype and shape (errors name the file and tensor).
  const SafetensorsEntry& expect(const std::string& name, const std::string& dtype,
                                 const std::vector<int64_t>& shape) const;
  // Checks an entry's dtype. An F32 reader given another floating type (a bf16 checkpoint from another
  // trainer) is told that the type is not supported and to cast it to float32, naming the tensor.
  void require_dtype(const SafetensorsEntry& entry, const std::string& dtype) const;
  // Reads an entry's bytes into dst (exactly entry.end - entry.begin bytes).
  void read(const SafetensorsEntry& entry, void* dst) const;
  // Reads an F32 entry and checks that every value is finite (weights, optimizer state): the error
  // names the file, the tensor and its first NaN or Inf, by index and value.
  void read_finite_f32(const SafetensorsEntry& entry, float* dst) const;
  std::string metadata_value(const std::string& key) const;  // error naming the file and key when absent

 private:
  std::filesystem::path path_;
  uint64_t data_start_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Collects tensors (pointers to host memory that must stay valid until write()) and writes them
// atomically, in the order added.
class SafetensorsWriter {
 public:
  void add(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape, const void* data);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  void write(const std::filesystem::path& path) const;

 private:
  struct Item {
    SafetensorsEntry entry;
    const void* data;
  };
  std::vector<Item> items_;
  std::map<std::string, std::string> metadata_;
  uint64_t data_bytes_ = 0;
};

}  // namespace ct
