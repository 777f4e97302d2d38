#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing
// (train/event_file.h). Debian 12 packages no C/C++ CRC-32C library (Google's crc32c is not there,
// and its Abseil predates absl/crc), so this is the usual table-driven form; tests/util check it
// against the standard vector ("123456789" -> 0xE3069283). It runs once per metrics row: speed is
// of no concern here.
#include <cstdint>
#include <string_view>

namespace ct {

uint32_t crc32c(std::string_view bytes);

// TFRecord's "masked" CRC: rotated and offset, so that a CRC of data that itself holds CRCs is not
// degenerate (TensorFlow's lib/hash/crc32c.h).
uint32_t masked_crc32c(std::string_view bytes);

}  // namespace ct
