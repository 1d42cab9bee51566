#include "parquet/encoding.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "parquet/column_reader.h"
#include "parquet/compression.h"
#include "parquet/metadata.h"
#include "parquet/predicate.h"
#include "parquet/thrift_compact.h"
#include "parquet/value_format.h"
#include "util/error.h"

namespace shoal::parquet {
namespace {

TEST(RleBitPackedTest, RoundTripsRunsAndLiteralsAtEveryWidth) {
  std::mt19937 random(7);
  for (int width = 0; width <= 20; ++width) {
    std::vector<uint32_t> values;
    uint32_t mask = width == 0 ? 0 : (width == 32 ? ~0u : (1u << width) - 1);
    for (int i = 0; i < 1000; ++i) {
      // Alternate stretches of repeats and of noise.
      uint32_t v = random() & mask;
      int repeat = (i / 50) % 2 == 0 ? 1 : 13;
      for (int k = 0; k < repeat; ++k) values.push_back(v);
    }
    std::string encoded;
    EncodeRleBitPacked(values.data(), static_cast<int64_t>(values.size()), width, &encoded);
    std::vector<uint32_t> decoded(values.size());
    RleBitPackedDecoder decoder(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size(), width);
    decoder.Get(decoded.data(), static_cast<int64_t>(decoded.size()));
    EXPECT_EQ(decoded, values) << "bit width " << width;
  }
}

TEST(RleBitPackedTest, AskingForMoreValuesThanEncodedIsAnError) {
  std::vector<uint32_t> values(10, 3);
  std::string encoded;
  EncodeRleBitPacked(values.data(), 10, 2, &encoded);
  std::vector<uint32_t> decoded(11);
  RleBitPackedDecoder decoder(reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size(), 2);
  try {
    decoder.Get(decoded.data(), 11);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 10 values, expected 11"), std::string::npos) << e.what();
  }
}

TEST(DeltaBinaryPackedTest, DecodesTheSpecificationExample) {
  // Encodings.md: 1, 2, 3, 4, 5 -> deltas 1 1 1 1, min delta 1, bit width 0.
  // Header: block 128, 4 miniblocks, 5 values, first value 1 (zigzag 2); block: min delta 1 (zigzag 2),
  // widths 0 0 0 0.
  const uint8_t data[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
  ValueBuffer out;
  out.Reset(PhysicalType::kInt32, 0);
  DecodeDeltaBinaryPacked(data, sizeof(data), 5, &out);
  ASSERT_EQ(out.count, 5);
  for (int i = 0; i < 5; ++i) {
    int32_t v;
    std::memcpy(&v, out.data.data() + 4 * i, 4);
    EXPECT_EQ(v, i + 1);
  }
}

TEST(DeltaBinaryPackedTest, RejectsAnInvalidBlockSize) {
  const uint8_t data[] = {0x07, 0x04, 0x05, 0x02};
  ValueBuffer out;
  out.Reset(PhysicalType::kInt64, 0);
  EXPECT_THROW(DecodeDeltaBinaryPacked(data, sizeof(data), 5, &out), Error);
}

TEST(PlainTest, ByteArrayLengthPastTheEndIsAnErrorWithTheNumbers) {
  const uint8_t data[] = {0x10, 0x00, 0x00, 0x00, 'a', 'b'};
  ValueBuffer out;
  out.Reset(PhysicalType::kByteArray, 0);
  try {
    DecodePlain(data, sizeof(data), 1, &out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("declares 16 bytes, but only 2 remain"), std::string::npos) << e.what();
  }
}

TEST(PlainTest, InPlaceByteArraysMoveDownOverTheirPrefixesAndCheckLengths) {
  ValueBuffer out;
  out.Reset(PhysicalType::kByteArray, 0);
  out.AppendByteArray(reinterpret_cast<const uint8_t*>("xy"), 2);  // an earlier page's value
  // Levels (3 bytes, already decoded) then two values, "hello" and "", as decompressed in place.
  const uint8_t page[] = {9, 9, 9, 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0};
  size_t base = out.data.size();
  out.data.resize(base + sizeof(page));
  std::memcpy(out.data.data() + base, page, sizeof(page));
  CompactPlainByteArrays(base, base + 3, sizeof(page) - 3, 2, &out);
  ASSERT_EQ(out.count, 3);
  EXPECT_EQ(std::string(out.data.begin(), out.data.end()), "xyhello");
  EXPECT_EQ(std::vector<int64_t>(out.offsets.begin(), out.offsets.end()), (std::vector<int64_t>{0, 2, 7, 7}));

  const uint8_t bad[] = {3, 0, 0, 0, 'a', 'b', 'c', 9, 0, 0, 0, 'd'};
  base = out.data.size();
  out.data.resize(base + sizeof(bad));
  std::memcpy(out.data.data() + base, bad, sizeof(bad));
  try {
    CompactPlainByteArrays(base, base, sizeof(bad), 2, &out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("value 1 of 2 declares 9 bytes, but only 1 remain"), std::string::npos)
        << e.what();
  }
}

TEST(CompressionTest, Lz4ReadsHadoopFramingAndRawBlocks) {
  std::string text(5000, 'a');
  for (size_t i = 0; i < text.size(); i += 7) text[i] = static_cast<char>('a' + i % 26);
  std::string raw = Compress(Codec::kLz4Raw, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  std::vector<uint8_t> out(text.size());
  Decompress(Codec::kLz4, reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), out.data(), out.size());
  EXPECT_EQ(std::string(out.begin(), out.end()), text);
  // Hadoop framing: [uncompressed size][compressed size], both big-endian, then the block.
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  std::string hadoop = be32(static_cast<uint32_t>(text.size())) + be32(static_cast<uint32_t>(raw.size())) + raw;
  std::fill(out.begin(), out.end(), 0);
  Decompress(Codec::kLz4, reinterpret_cast<const uint8_t*>(hadoop.data()), hadoop.size(), out.data(), out.size());
  EXPECT_EQ(std::string(out.begin(), out.end()), text);
}

TEST(CompressionTest, UnknownAndUnsupportedCodecsAreNamed) {
  uint8_t byte = 0, out = 0;
  try {
    Decompress(static_cast<Codec>(42), &byte, 1, &out, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("codec 42"), std::string::npos) << e.what();
  }
  try {
    Decompress(Codec::kLzo, &byte, 1, &out, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LZO"), std::string::npos) << e.what();
  }
  // A corrupt stream names the codec and the sizes.
  std::string garbage = "definitely not zstd";
  std::vector<uint8_t> buffer(100);
  try {
    Decompress(Codec::kZstd, reinterpret_cast<const uint8_t*>(garbage.data()), garbage.size(), buffer.data(), 100);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ZSTD decompression failed"), std::string::npos) << e.what();
  }
}

TEST(ColumnChunkTest, UnknownValueEncodingIsNamed) {
  // One v1 data page of a required INT32 column, encoding 12 (not in the format).
  PageHeader header;
  header.type = PageType::kDataPage;
  header.uncompressed_page_size = header.compressed_page_size = 4;
  DataPageHeader d;
  d.num_values = 1;
  d.encoding = static_cast<Encoding>(12);
  header.data_page_header = d;
  std::string chunk = SerializePageHeader(header) + std::string(4, '\0');
  ColumnMetaData meta;
  meta.type = PhysicalType::kInt32;
  meta.num_values = 1;
  ColumnDescriptor column;
  column.physical = PhysicalType::kInt32;
  try {
    DecodeColumnChunk(reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size(), meta, column, 1, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("value encoding UNKNOWN_ENCODING (12)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("page 0"), std::string::npos) << e.what();
  }
}

TEST(ValueFormatTest, Float16AndUuidColumnsRender) {
  Field half;
  half.physical = PhysicalType::kFixedLenByteArray;
  half.type_length = 2;
  half.logical.kind = LogicalType::Kind::kFloat16;
  ColumnVector column;
  column.field = &half;
  column.length = 3;
  column.data = {0x00, 0x3c, 0x00, 0xc1, 0x00, 0x7c};  // 1.0, -2.5, +infinity (little-endian)
  std::string out;
  for (int i = 0; i < 3; ++i) AppendJsonValue(column, i, &out);
  EXPECT_EQ(out, "1-2.5\"Infinity\"");
  const uint8_t uuid[16] = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
  EXPECT_EQ(FormatUuid(uuid), "123e4567-e89b-12d3-a456-426614174000");
}

TEST(ThriftTest, SkipsUnknownFieldsAndChecksLengths) {
  thrift::CompactWriter w;
  w.StructBegin();
  w.FieldI32(1, 2);                       // type: DICTIONARY_PAGE
  w.FieldI32(2, 10);
  w.FieldI32(3, 10);
  w.FieldBinary(99, "from a newer writer");  // unknown: skipped
  w.StructEnd();
  size_t used = 0;
  PageHeader h = ParsePageHeader(reinterpret_cast<const uint8_t*>(w.buffer().data()), w.buffer().size(), &used);
  EXPECT_EQ(h.type, PageType::kDictionaryPage);
  EXPECT_EQ(h.compressed_page_size, 10);
  EXPECT_EQ(used, w.buffer().size());
  // Cut inside the unknown field's bytes: an error, never a read past the end.
  std::string cut = w.buffer().substr(0, w.buffer().size() - 5);
  EXPECT_THROW(ParsePageHeader(reinterpret_cast<const uint8_t*>(cut.data()), cut.size(), &used), Error);
}

TEST(ValueFormatTest, RendersTemporalDecimalAndFloatValues) {
  EXPECT_EQ(FormatDate(0), "1970-01-01");
  EXPECT_EQ(FormatDate(-1), "1969-12-31");
  EXPECT_EQ(FormatDate(19723), "2024-01-01");
  EXPECT_EQ(FormatTimestamp(1500, TimeUnit::kMillis, true), "1970-01-01T00:00:01.500000Z");
  EXPECT_EQ(FormatTimestamp(-1, TimeUnit::kMicros, false), "1969-12-31T23:59:59.999999");
  EXPECT_EQ(FormatTimestamp(1, TimeUnit::kNanos, false), "1970-01-01T00:00:00.000000001");
  EXPECT_EQ(FormatTime(3723000, TimeUnit::kMillis), "01:02:03");
  EXPECT_EQ(FormatDecimal(12345, 3), "12.345");
  EXPECT_EQ(FormatDecimal(-5, 2), "-0.05");
  const uint8_t minus_one[] = {0xff, 0xff};
  EXPECT_EQ(FormatDecimalBigEndian(minus_one, 2, 1), "-0.1");
  const uint8_t big[] = {0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};  // 2^64
  EXPECT_EQ(FormatDecimalBigEndian(big, sizeof(big), 0), "18446744073709551616");
  std::string s;
  AppendJsonDouble(0.1, &s);
  AppendJsonFloat(1.1f, &s);
  AppendJsonDouble(std::numeric_limits<double>::infinity(), &s);
  EXPECT_EQ(s, "0.11.1\"Infinity\"");
  s.clear();
  AppendJsonString("a\"\n\xff", &s);
  EXPECT_EQ(s, "\"a\\\"\\n\xef\xbf\xbd\"");
  EXPECT_EQ(Base64("hi!?"), "aGkhPw==");
}

TEST(PredicateTest, ParsesPrecedenceQuotesAndNullTests) {
  EXPECT_EQ(Predicate::Parse("a = 1 or b < 2.5 and c != 'x''y'").ToString(), "(a = 1 OR (b < 2.5 AND c != 'x'y'))");
  EXPECT_EQ(Predicate::Parse("(a >= -3) and `odd name` is not null").ToString(), "(a >= -3 AND odd name IS NOT NULL)");
  try {
    Predicate::Parse("a ~ 3");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at character 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Predicate::Parse("a = 'open"), Error);
}

TEST(PredicateTest, PrunesOnlyWhatStatisticsRuleOut) {
  Field field;
  field.name = "x";
  field.physical = PhysicalType::kInt64;
  ColumnStats stats{&field, Literal::Int(10), Literal::Int(20), 0, 100};
  auto lookup = [&](const std::string& name) -> std::optional<ColumnStats> {
    if (name == "x") return stats;
    return std::nullopt;
  };
  EXPECT_TRUE(Predicate::Parse("x = 10").MayMatch(lookup));
  EXPECT_FALSE(Predicate::Parse("x = 21").MayMatch(lookup));
  EXPECT_FALSE(Predicate::Parse("x < 10").MayMatch(lookup));
  EXPECT_TRUE(Predicate::Parse("x <= 10").MayMatch(lookup));
  EXPECT_FALSE(Predicate::Parse("x > 20").MayMatch(lookup));
  EXPECT_FALSE(Predicate::Parse("x IS NULL").MayMatch(lookup));
  EXPECT_TRUE(Predicate::Parse("y = 1").MayMatch(lookup));  // no statistics: may match
  EXPECT_TRUE(Predicate::Parse("x > 100 or y = 1").MayMatch(lookup));
  EXPECT_FALSE(Predicate::Parse("x > 100 and y = 1").MayMatch(lookup));
}

TEST(PredicateTest, CoercesIsoTextForDateColumns) {
  Field field;
  field.name = "day";
  field.physical = PhysicalType::kInt32;
  field.logical.kind = LogicalType::Kind::kDate;
  EXPECT_EQ(CoerceLiteral(field, Literal::String("2024-01-01")).int_value, 19723);
  EXPECT_THROW(CoerceLiteral(field, Literal::String("yesterday")), Error);
  Field ts;
  ts.name = "ts";
  ts.physical = PhysicalType::kInt64;
  ts.logical.kind = LogicalType::Kind::kTimestamp;
  ts.logical.unit = TimeUnit::kMillis;
  // The same instant written three ways; an offset carries across midnight.
  int64_t utc = CoerceLiteral(ts, Literal::String("2000-01-01T08:00:00Z")).int_value;
  EXPECT_EQ(utc, 946713600000);
  EXPECT_EQ(CoerceLiteral(ts, Literal::String("2000-01-01T00:00:00.000-08:00")).int_value, utc);
  EXPECT_EQ(CoerceLiteral(ts, Literal::String("2000-01-01 09:30:00+01:30")).int_value, utc);
  EXPECT_EQ(CoerceLiteral(ts, Literal::String("1999-12-31T23:00:00-09:00")).int_value, utc);
}

}  // namespace
}  // namespace shoal::parquet
