#include "train/event_file.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "util/clock.h"
#include "util/crc32c.h"
#include "util/error.h"

namespace ct {

namespace {

static_assert(std::endian::native == std::endian::little, "the fixed-width fields below are written as in memory");

// Protobuf wire types (protobuf.dev/programming-guides/encoding).
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_tag(std::string& out, uint32_t field, uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }

template <typename T>
void put_fixed(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// tensorflow.Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5.
std::string event_head(double wall_time, int64_t step) {
  std::string out;
  put_tag(out, 1, kFixed64);
  put_fixed(out, wall_time);
  if (step != 0) {  // proto3: a zero is left out, as protobuf itself writes it
    put_tag(out, 2, kVarint);
    put_varint(out, static_cast<uint64_t>(step));  // int64: negatives as ten-byte two's complement
  }
  return out;
}

}  // namespace

std::string tf_record(std::string_view data) {
  std::string out;
  put_fixed(out, static_cast<uint64_t>(data.size()));
  put_fixed(out, masked_crc32c(out));
  out.append(data);
  put_fixed(out, masked_crc32c(data));
  return out;
}

std::string file_version_event(double wall_time, std::string_view version) {
  std::string out = event_head(wall_time, 0);
  put_bytes(out, 3, version);
  return out;
}

std::string scalars_event(double wall_time, int64_t step, const Scalars& scalars) {
  // tensorflow.Summary: repeated Value value = 1; Summary.Value: tag = 1 (string), simple_value = 2 (float).
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    put_bytes(v, 1, tag);
    put_tag(v, 2, kFixed32);
    put_fixed(v, value);
    put_bytes(summary, 1, v);
  }
  std::string out = event_head(wall_time, step);
  put_bytes(out, 5, summary);
  return out;
}

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  check(!ec, dir.string(), ": cannot make the TensorBoard folder: ", ec.message());
  char host[256] = "localhost";
  if (::gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof(host) - 1] = '\0';
  const double now = unix_seconds();
  path_ = dir / str("events.out.tfevents.", static_cast<int64_t>(now), ".", host, ".", ::getpid(), ".clocktrain");
  file_ = std::fopen(path_.c_str(), "wb");
  check(file_ != nullptr, path_.string(), ": cannot open for writing: ", std::strerror(errno));
  write_record(file_version_event(now));
}

EventFileWriter::~EventFileWriter() {
  if (file_) std::fclose(file_);
}

void EventFileWriter::write_scalars(double wall_time, int64_t step, const Scalars& scalars) {
  if (!scalars.empty()) write_record(scalars_event(wall_time, step, scalars));
}

void EventFileWriter::write_record(std::string_view data) {
  const std::string record = tf_record(data);
  const bool ok = std::fwrite(record.data(), 1, record.size(), file_) == record.size() && std::fflush(file_) == 0;
  check(ok, path_.string(), ": write failed: ", std::strerror(errno));
}

}  // namespace ct
