#pragma once
// SHA-256 through OpenSSL, as lowercase hex: shard and tokenizer identities in manifests.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace ct {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t bytes);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::string hex_digest();  // finishes the hash

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::filesystem::path& path);

}  // namespace ct
