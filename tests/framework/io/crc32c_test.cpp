#include "framework/io/crc32c.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/framework/io/io_test_support.h"

namespace kestrel::io {
namespace {

// crc32c_extend may use the CPU's instruction; the table version must agree with it everywhere.
TEST(Crc32c, HardwareAndTablesAgreeAtEveryLengthAndAlignment) {
  const std::string data = kestrel::testing::noise(600, 11);
  for (std::size_t offset = 0; offset < 16; ++offset) {
    for (std::size_t length = 0; offset + length <= data.size(); length += (length < 40 ? 1 : 37)) {
      const char* p = data.data() + offset;
      ASSERT_EQ(crc32c_extend(0, p, length), detail::crc32c_extend_portable(0, p, length))
          << "offset " << offset << " length " << length;
      ASSERT_EQ(crc32c_extend(0x12345678u, p, length), detail::crc32c_extend_portable(0x12345678u, p, length));
    }
  }
  EXPECT_EQ(detail::crc32c_extend_portable(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
}

}  // namespace
}  // namespace kestrel::io
