#include "delta/deletion_vector.h"

#include <gtest/gtest.h>

#include <cstring>

#include "util/error.h"

namespace shoal::delta {
namespace {

// Little-endian serialisation helpers for building bitmaps by hand.
void Put16(std::string& s, uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); }
void Put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void Put64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }

std::vector<uint64_t> Decode(const std::string& bytes) {
  return DecodeRoaringBitmapArray(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

TEST(DeletionVectorTest, Z85DecodesTheSpecificationExample) {
  std::string bytes = Z85Decode("HelloWorld");
  const uint8_t expected[] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
  ASSERT_EQ(bytes.size(), 8u);
  EXPECT_EQ(std::memcmp(bytes.data(), expected, 8), 0);
  EXPECT_THROW(Z85Decode("Hell"), Error);
  EXPECT_THROW(Z85Decode("Hello~orld"), Error);
}

TEST(DeletionVectorTest, DecodesArrayRunAndBitmapContainersInTwoBuckets) {
  std::string b;
  Put32(b, 1681511377);
  Put64(b, 2);  // buckets
  // Bucket 0: one run container (cookie with runs), values 5..14.
  Put32(b, 0);
  Put32(b, 12347);  // 1 container, runs
  b.push_back(1);   // container 0 is a run container
  Put16(b, 0);      // key
  Put16(b, 9);      // cardinality - 1
  Put16(b, 1);      // one run
  Put16(b, 5);      // start
  Put16(b, 9);      // length - 1
  // Bucket 1 (values 2^32 + ...): an array container (key 0) and a bitmap container (key 1).
  Put32(b, 1);
  Put32(b, 12346);
  Put32(b, 2);  // containers
  Put16(b, 0);
  Put16(b, 1);  // 2 values
  Put16(b, 1);
  Put16(b, 4999);  // 5000 values
  Put32(b, 0);
  Put32(b, 0);  // offsets (unused)
  Put16(b, 7);
  Put16(b, 300);
  std::string bitmap(8192, '\0');
  for (int v = 0; v < 5000; ++v) bitmap[v / 8] = static_cast<char>(bitmap[v / 8] | (1 << (v % 8)));
  b += bitmap;
  std::vector<uint64_t> rows = Decode(b);
  ASSERT_EQ(rows.size(), 10u + 2u + 5000u);
  EXPECT_EQ(rows[0], 5u);
  EXPECT_EQ(rows[9], 14u);
  EXPECT_EQ(rows[10], (uint64_t{1} << 32) + 7);
  EXPECT_EQ(rows[11], (uint64_t{1} << 32) + 300);
  EXPECT_EQ(rows[12], (uint64_t{1} << 32) + 65536);
  EXPECT_EQ(rows.back(), (uint64_t{1} << 32) + 65536 + 4999);
  // Every truncation is an error, never a read past the end.
  for (size_t cut = 0; cut < b.size(); cut += 97) EXPECT_THROW(Decode(b.substr(0, cut)), Error) << cut;
}

TEST(DeletionVectorTest, WrongMagicAndCookieAreNamed) {
  std::string b;
  Put32(b, 42);
  try {
    Decode(b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("magic number 42"), std::string::npos) << e.what();
  }
  std::string c;
  Put32(c, 1681511377);
  Put64(c, 1);
  Put32(c, 0);
  Put32(c, 99);
  EXPECT_THROW(Decode(c), Error);
}

}  // namespace
}  // namespace shoal::delta
