#include "util/crc32.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace shoal {
namespace {

TEST(Crc32Test, KnownValue) {
  const std::string text = "123456789";
  EXPECT_EQ(Crc32(0, reinterpret_cast<const uint8_t*>(text.data()), text.size()), 0xCBF43926u);
}

TEST(Crc32Test, AgreesWithZlibForEveryLengthAndAlignment) {
  std::mt19937 random(99);
  std::vector<uint8_t> data(70000);
  for (uint8_t& b : data) b = static_cast<uint8_t>(random());
  for (size_t length : {0, 1, 15, 16, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 320, 511, 512, 1000, 1040,
                        4096, 65535, 69000}) {
    for (size_t offset : {0, 1, 3, 7}) {
      const uint8_t* p = data.data() + offset;
      EXPECT_EQ(Crc32(0, p, length), Crc32Portable(0, p, length)) << "length " << length << " offset " << offset;
      // Continuing from a previous value, as a stream would.
      EXPECT_EQ(Crc32(0x12345678, p, length), Crc32Portable(0x12345678, p, length)) << "length " << length;
      for (Crc32Kernel kernel : {Crc32Kernel::kPclmul, Crc32Kernel::kVpclmul}) {
        if (!Crc32KernelAvailable(kernel)) continue;
        EXPECT_EQ(Crc32With(kernel, 0x12345678, p, length), Crc32Portable(0x12345678, p, length))
            << "kernel " << static_cast<int>(kernel) << " length " << length << " offset " << offset;
      }
    }
  }
}

}  // namespace
}  // namespace shoal
