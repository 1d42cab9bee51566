// Parquet's enumerations (parquet.thrift), with the numbers the format assigns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shoal::parquet {

enum class PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};

enum class ConvertedType : int32_t {
  kNone = -1,
  kUtf8 = 0,
  kMap = 1,
  kMapKeyValue = 2,
  kList = 3,
  kEnum = 4,
  kDecimal = 5,
  kDate = 6,
  kTimeMillis = 7,
  kTimeMicros = 8,
  kTimestampMillis = 9,
  kTimestampMicros = 10,
  kUint8 = 11,
  kUint16 = 12,
  kUint32 = 13,
  kUint64 = 14,
  kInt8 = 15,
  kInt16 = 16,
  kInt32 = 17,
  kInt64 = 18,
  kJson = 19,
  kBson = 20,
  kInterval = 21,
};

enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };

enum class Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9,
};

enum class Codec : int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,
  kBrotli = 4,
  kLz4 = 5,  // Hadoop-framed LZ4, or a raw LZ4 block from older writers
  kZstd = 6,
  kLz4Raw = 7,
};

enum class PageType : int32_t {
  kDataPage = 0,
  kIndexPage = 1,
  kDictionaryPage = 2,
  kDataPageV2 = 3,
};

enum class TimeUnit : int32_t { kMillis = 1, kMicros = 2, kNanos = 3 };

/// The logical type of a column: LogicalType when the file has one, else derived from the
/// ConvertedType (LogicalTypes.md, "backward compatibility").
struct LogicalType {
  enum class Kind {
    kNone,
    kString,
    kMap,
    kList,
    kEnum,
    kDecimal,
    kDate,
    kTime,
    kTimestamp,
    kInteger,
    kUnknown,  // always null
    kJson,
    kBson,
    kUuid,
    kFloat16,
    kInterval,
    kOther,  // a logical type this reader does not know: the physical type is used
  };
  Kind kind = Kind::kNone;
  int32_t scale = 0;        // kDecimal
  int32_t precision = 0;    // kDecimal
  bool utc_adjusted = false;  // kTime, kTimestamp
  TimeUnit unit = TimeUnit::kMillis;  // kTime, kTimestamp
  int32_t bit_width = 0;    // kInteger
  bool is_signed = true;    // kInteger
};

std::string_view PhysicalTypeName(PhysicalType type);
std::string_view EncodingName(Encoding encoding);
std::string_view CodecName(Codec codec);
std::string_view PageTypeName(PageType type);
std::string_view RepetitionName(Repetition repetition);
/// "STRING", "DECIMAL(9,2)", "TIMESTAMP(MICROS,UTC)", "INT(8,unsigned)", ...
std::string LogicalTypeName(const LogicalType& type);

/// Size in bytes of one value of a fixed-width physical type (BOOLEAN is 1 in memory);
/// `type_length` for FIXED_LEN_BYTE_ARRAY, 0 for BYTE_ARRAY.
int32_t FixedWidthOf(PhysicalType type, int32_t type_length);

}  // namespace shoal::parquet
