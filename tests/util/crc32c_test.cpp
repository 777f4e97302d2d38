#include "util/crc32c.h"

#include <gtest/gtest.h>

namespace ct {
namespace {

TEST(Crc32c, StandardCheckValue) {
  // The CRC-32C catalogue's check value (RFC 3720, iSCSI) and its edge cases.
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0x00000000u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720, B.4: 32 bytes of zeros
  EXPECT_EQ(crc32c(std::string(32, '\xFF')), 0x62A8AB43u);  // RFC 3720, B.4: 32 bytes of ones
}

TEST(Crc32c, MaskIsTensorFlows) {
  // TensorFlow's Mask(): rotate right by 15, add 0xa282ead8.
  const uint32_t c = crc32c("123456789");
  EXPECT_EQ(masked_crc32c("123456789"), ((c >> 15) | (c << 17)) + 0xA282EAD8u);
  EXPECT_EQ(masked_crc32c(""), 0xA282EAD8u);
}

}  // namespace
}  // namespace ct
