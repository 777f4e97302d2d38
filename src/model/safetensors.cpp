#include "model/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "util/error.h"
#include "util/files.h"
#include "util/json.h"

namespace ct {

namespace {
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the format's own limit (100 MB)
}

int64_t SafetensorsEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t safetensors_dtype_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 0;
}

SafetensorsFile::SafetensorsFile(std::filesystem::path path) : path_(std::move(path)) {
  const std::string where = path_.string();
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path_, ec);
  check(!ec, where, ": cannot read: ", ec.message());
  check(file_size >= 8, where, ": not a safetensors file: ", file_size, " bytes, expected at least 8");
  std::ifstream in(path_, std::ios::binary);
  check(in.good(), where, ": cannot open for reading");
  unsigned char size_bytes[8];
  in.read(reinterpret_cast<char*>(size_bytes), 8);
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | size_bytes[i];
  check(header_bytes <= kMaxHeaderBytes && header_bytes <= file_size - 8, where, ": header length ", header_bytes,
        " exceeds the file (", file_size, " bytes) or the 100 MB limit");
  std::string header(header_bytes, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_bytes));
  check(in.good(), where, ": cannot read the ", header_bytes, "-byte header");
  data_start_ = 8 + header_bytes;
  const uint64_t data_size = file_size - data_start_;

  const Json j = json_from_text(header, str(where, ": header"));  // byte offsets count from the header
  check(j.is_object(), where, ": header: expected a JSON object");
  for (const auto& [name, value] : j.items()) {
    if (name == "__metadata__") {
      check(value.is_object(), where, ": header: field '__metadata__': expected an object of strings");
      for (const auto& [key, v] : value.items()) {
        check(v.is_string(), where, ": header: __metadata__ field '", key, "': expected a string");
        metadata_[key] = v.get<std::string>();
      }
      continue;
    }
    const std::string what = str(where, ": tensor '", name, "'");
    check(value.is_object(), what, ": expected an object");
    SafetensorsEntry e;
    e.name = name;
    e.dtype = json_field<std::string>(value, "dtype", what);
    check(safetensors_dtype_size(e.dtype) > 0, what, ": field 'dtype': unknown dtype '", e.dtype, "'");
    e.shape = json_field<std::vector<int64_t>>(value, "shape", what);
    uint64_t numel = 1;
    for (int64_t d : e.shape) {
      check(d >= 0, what, ": field 'shape': negative dimension ", d);
      check(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel) && numel <= file_size, what,
            ": field 'shape': more elements than the file has bytes");
    }
    auto offsets = json_field<std::vector<uint64_t>>(value, "data_offsets", what);
    check(offsets.size() == 2, what, ": field 'data_offsets': expected [begin, end]");
    e.begin = offsets[0];
    e.end = offsets[1];
    check(e.begin <= e.end && e.end <= data_size, what, ": field 'data_offsets': [", e.begin, ", ", e.end,
          "] lies outside the ", data_size, "-byte data section");
    const uint64_t expected = static_cast<uint64_t>(e.numel()) * safetensors_dtype_size(e.dtype);
    check(e.end - e.begin == expected, what, ": field 'data_offsets': ", e.end - e.begin, " bytes, but dtype ",
          e.dtype, " and its shape need ", expected);
    entries_.push_back(std::move(e));
  }
  // entries() lists the tensors in data order (the order they were written).
  std::stable_sort(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < entries_.size(); ++i)
    check(entries_[i].begin >= entries_[i - 1].end, where, ": tensors '", entries_[i - 1].name, "' and '",
          entries_[i].name, "' overlap");
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

const SafetensorsEntry& SafetensorsFile::expect(const std::string& name, const std::string& dtype,
                                                const std::vector<int64_t>& shape) const {
  const SafetensorsEntry* e = find(name);
  check(e != nullptr, path_.string(), ": missing tensor '", name, "'");
  require_dtype(*e, dtype);
  auto shape_text = [](const std::vector<int64_t>& s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
  };
  check(e->shape == shape, path_.string(), ": tensor '", name, "': field 'shape': expected ", shape_text(shape),
        ", got ", shape_text(e->shape));
  return *e;
}

void SafetensorsFile::require_dtype(const SafetensorsEntry& entry, const std::string& dtype) const {
  if (entry.dtype == dtype) return;
  const std::string where = str(path_.string(), ": tensor '", entry.name, "': field 'dtype': ");
  check(!(dtype == "F32" && (entry.dtype == "BF16" || entry.dtype == "F16" || entry.dtype == "F64")), where,
        entry.dtype, " is not supported: cast the checkpoint to float32 (F32), e.g. in PyTorch save "
        "{name: tensor.float() for name, tensor in state_dict.items()}");
  fail(where, "expected ", dtype, ", got ", entry.dtype);
}

void SafetensorsFile::read(const SafetensorsEntry& entry, void* dst) const {
  std::ifstream in(path_, std::ios::binary);
  check(in.good(), path_.string(), ": cannot open for reading");
  in.seekg(static_cast<std::streamoff>(data_start_ + entry.begin));
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(entry.end - entry.begin));
  check(in.good(), path_.string(), ": tensor '", entry.name, "': short read");
}

void SafetensorsFile::read_finite_f32(const SafetensorsEntry& entry, float* dst) const {
  require_dtype(entry, "F32");
  read(entry, dst);
  const int64_t n = entry.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(dst[i])) continue;
    // The flat index as one index per dimension (row-major), e.g. the row of an embedding.
    std::string index;
    for (int64_t d = static_cast<int64_t>(entry.shape.size()) - 1, rest = i; d >= 0; --d) {
      index = str(rest % entry.shape[d], index.empty() ? "" : ", ", index);
      rest /= entry.shape[d];
    }
    fail(path_.string(), ": tensor '", entry.name, "': element [", index, "] (flat index ", i, ") is ", dst[i],
         "; every value must be finite");
  }
}

std::string SafetensorsFile::metadata_value(const std::string& key) const {
  auto it = metadata_.find(key);
  check(it != metadata_.end(), path_.string(), ": __metadata__: missing field '", key, "'");
  return it->second;
}

void SafetensorsWriter::add(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
                            const void* data) {
  check(safetensors_dtype_size(dtype) > 0, "safetensors: unknown dtype '", dtype, "' for tensor '", name, "'");
  check(name != "__metadata__", "safetensors: reserved tensor name '__metadata__'");
  for (const Item& item : items_) check(item.entry.name != name, "safetensors: duplicate tensor '", name, "'");
  Item item{{name, dtype, shape, data_bytes_, 0}, data};
  item.entry.end = data_bytes_ + static_cast<uint64_t>(item.entry.numel()) * safetensors_dtype_size(dtype);
  data_bytes_ = item.entry.end;
  items_.push_back(std::move(item));
}

void SafetensorsWriter::write(const std::filesystem::path& path) const {
  OrderedJson header = OrderedJson::object();
  if (!metadata_.empty()) {
    OrderedJson meta = OrderedJson::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
    header["__metadata__"] = meta;
  }
  for (const Item& item : items_)
    header[item.entry.name] = OrderedJson{{"dtype", item.entry.dtype},
                                          {"shape", item.entry.shape},
                                          {"data_offsets", {item.entry.begin, item.entry.end}}};
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  unsigned char size_bytes[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<unsigned char>(n >> (8 * i));
  AtomicWriter out(path);
  out.write(size_bytes, 8);
  out.write(text);
  for (const Item& item : items_) out.write(item.data, item.entry.end - item.entry.begin);
  out.commit();
}

}  // namespace ct
