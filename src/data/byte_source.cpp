#include "data/byte_source.h"

#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "util/error.h"

namespace ct {

namespace {

// Reads a file on disk in blocks, counting the bytes taken so that errors can name an offset.
class FileInput {
 public:
  explicit FileInput(const std::filesystem::path& path) : path_(path), file_(std::fopen(path.c_str(), "rb")) {
    check(file_ != nullptr, path.string(), ": cannot open for reading: ", std::strerror(errno));
  }
  ~FileInput() {
    if (file_) std::fclose(file_);
  }
  FileInput(const FileInput&) = delete;
  FileInput& operator=(const FileInput&) = delete;

  size_t read(void* buffer, size_t capacity) {
    size_t n = std::fread(buffer, 1, capacity, file_);
    if (n == 0 && std::ferror(file_)) fail(path_.string(), ": read error at byte ", bytes_read_, ": ", std::strerror(errno));
    bytes_read_ += n;
    return n;
  }
  uint64_t bytes_read() const { return bytes_read_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_;
  uint64_t bytes_read_ = 0;
};

class PlainSource : public ByteSource {
 public:
  explicit PlainSource(const std::filesystem::path& path) : input_(path) {}
  size_t read(char* buffer, size_t capacity) override { return input_.read(buffer, capacity); }
  uint64_t file_bytes_consumed() const override { return input_.bytes_read(); }

 private:
  FileInput input_;
};

class ZstdSource : public ByteSource {
 public:
  explicit ZstdSource(const std::filesystem::path& path)
      : input_(path), stream_(ZSTD_createDStream()), in_buffer_(ZSTD_DStreamInSize()) {
    check(stream_ != nullptr, path.string(), ": cannot create a zstd decoder");
    ZSTD_initDStream(stream_);
  }
  ~ZstdSource() override { ZSTD_freeDStream(stream_); }

  size_t read(char* buffer, size_t capacity) override {
    for (;;) {
      if (in_.pos == in_.size && !file_eof_) refill();
      if (in_.pos == in_.size && file_eof_ && !in_frame_) return 0;
      ZSTD_outBuffer out{buffer, capacity, 0};
      size_t ret = ZSTD_decompressStream(stream_, &out, &in_);
      if (ZSTD_isError(ret)) {
        fail(input_.path().string(), ": corrupt zstd stream near compressed byte ", file_bytes_consumed(), ": ",
             ZSTD_getErrorName(ret));
      }
      // 0 means a frame was completely decoded and flushed; anything else, the frame goes on.
      in_frame_ = ret != 0;
      if (out.pos > 0) return out.pos;
      if (in_.pos == in_.size && file_eof_) {
        check(!in_frame_, input_.path().string(), ": truncated zstd stream: the file ends inside a frame at byte ",
              input_.bytes_read());
        return 0;
      }
    }
  }
  uint64_t file_bytes_consumed() const override { return input_.bytes_read() - (in_.size - in_.pos); }

 private:
  void refill() {
    size_t n = input_.read(in_buffer_.data(), in_buffer_.size());
    in_ = ZSTD_inBuffer{in_buffer_.data(), n, 0};
    if (n == 0) file_eof_ = true;
  }

  FileInput input_;
  ZSTD_DStream* stream_;
  std::vector<char> in_buffer_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  bool file_eof_ = false;
  bool in_frame_ = false;
};

class GzipSource : public ByteSource {
 public:
  explicit GzipSource(const std::filesystem::path& path) : input_(path), in_buffer_(1 << 18) {
    std::memset(&zs_, 0, sizeof(zs_));
    // 16 + MAX_WBITS: expect a gzip header and trailer (not a raw zlib stream).
    check(inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK, path.string(), ": cannot create a gzip decoder");
  }
  ~GzipSource() override { inflateEnd(&zs_); }

  size_t read(char* buffer, size_t capacity) override {
    for (;;) {
      if (zs_.avail_in == 0 && !file_eof_) refill();
      if (zs_.avail_in == 0 && file_eof_) {
        check(!in_member_, input_.path().string(), ": truncated gzip stream: the file ends inside a member at byte ",
              input_.bytes_read());
        return 0;
      }
      if (!in_member_) {  // a new gzip member (concatenated .gz files are one stream)
        if (started_) inflateReset(&zs_);
        in_member_ = started_ = true;
      }
      zs_.next_out = reinterpret_cast<Bytef*>(buffer);
      zs_.avail_out = static_cast<uInt>(std::min<size_t>(capacity, 1u << 30));
      uInt out_before = zs_.avail_out;
      int ret = inflate(&zs_, Z_NO_FLUSH);
      if (ret == Z_STREAM_END) {
        in_member_ = false;
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
        fail(input_.path().string(), ": corrupt gzip stream near compressed byte ", file_bytes_consumed(), ": ",
             zs_.msg ? zs_.msg : "inflate error");
      }
      size_t produced = out_before - zs_.avail_out;
      if (produced > 0) return produced;
    }
  }
  uint64_t file_bytes_consumed() const override { return input_.bytes_read() - zs_.avail_in; }

 private:
  void refill() {
    size_t n = input_.read(in_buffer_.data(), in_buffer_.size());
    zs_.next_in = reinterpret_cast<Bytef*>(in_buffer_.data());
    zs_.avail_in = static_cast<uInt>(n);
    if (n == 0) file_eof_ = true;
  }

  FileInput input_;
  std::vector<char> in_buffer_;
  z_stream zs_;
  bool file_eof_ = false;
  bool in_member_ = false;
  bool started_ = false;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Compression compression_of(const std::filesystem::path& path) {
  std::string name = path.filename().string();
  if (ends_with(name, ".zst")) return Compression::zstd;
  if (ends_with(name, ".gz")) return Compression::gzip;
  return Compression::none;
}

std::unique_ptr<ByteSource> open_byte_source(const std::filesystem::path& path) {
  switch (compression_of(path)) {
    case Compression::zstd:
      return std::make_unique<ZstdSource>(path);
    case Compression::gzip:
      return std::make_unique<GzipSource>(path);
    case Compression::none:
      break;
  }
  return std::make_unique<PlainSource>(path);
}

LineReader::LineReader(std::unique_ptr<ByteSource> source) : source_(std::move(source)) {}

bool LineReader::next(std::string& line) {
  size_t scan = begin_;
  for (;;) {
    const void* found = std::memchr(buffer_.data() + scan, '\n', end_ - scan);
    if (found != nullptr) {
      size_t newline = static_cast<size_t>(static_cast<const char*>(found) - buffer_.data());
      size_t length = newline - begin_;
      bytes_read_ += length + 1;
      if (length > 0 && buffer_[newline - 1] == '\r') --length;
      line.assign(buffer_.data() + begin_, length);
      begin_ = newline + 1;
      ++line_number_;
      return true;
    }
    scan = end_;
    if (eof_) {
      if (begin_ == end_) return false;
      line.assign(buffer_.data() + begin_, end_ - begin_);
      bytes_read_ += end_ - begin_;
      begin_ = end_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      ++line_number_;
      return true;
    }
    if (begin_ > 0) {  // keep only the unfinished line at the front
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      scan -= begin_;
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == buffer_.size()) buffer_.resize(std::max<size_t>(size_t{4} << 20, buffer_.size() * 2));
    size_t n = source_->read(buffer_.data() + end_, buffer_.size() - end_);
    if (n == 0) {
      eof_ = true;
    } else {
      end_ += n;
    }
  }
}

}  // namespace ct
