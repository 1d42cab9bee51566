#include "parquet/types.h"

namespace shoal::parquet {

std::string_view PhysicalTypeName(PhysicalType type) {
  switch (type) {
    case PhysicalType::kBoolean: return "BOOLEAN";
    case PhysicalType::kInt32: return "INT32";
    case PhysicalType::kInt64: return "INT64";
    case PhysicalType::kInt96: return "INT96";
    case PhysicalType::kFloat: return "FLOAT";
    case PhysicalType::kDouble: return "DOUBLE";
    case PhysicalType::kByteArray: return "BYTE_ARRAY";
    case PhysicalType::kFixedLenByteArray: return "FIXED_LEN_BYTE_ARRAY";
  }
  return "UNKNOWN_TYPE";
}

std::string_view EncodingName(Encoding encoding) {
  switch (encoding) {
    case Encoding::kPlain: return "PLAIN";
    case Encoding::kPlainDictionary: return "PLAIN_DICTIONARY";
    case Encoding::kRle: return "RLE";
    case Encoding::kBitPacked: return "BIT_PACKED";
    case Encoding::kDeltaBinaryPacked: return "DELTA_BINARY_PACKED";
    case Encoding::kDeltaLengthByteArray: return "DELTA_LENGTH_BYTE_ARRAY";
    case Encoding::kDeltaByteArray: return "DELTA_BYTE_ARRAY";
    case Encoding::kRleDictionary: return "RLE_DICTIONARY";
    case Encoding::kByteStreamSplit: return "BYTE_STREAM_SPLIT";
  }
  return "UNKNOWN_ENCODING";
}

std::string_view CodecName(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed: return "UNCOMPRESSED";
    case Codec::kSnappy: return "SNAPPY";
    case Codec::kGzip: return "GZIP";
    case Codec::kLzo: return "LZO";
    case Codec::kBrotli: return "BROTLI";
    case Codec::kLz4: return "LZ4";
    case Codec::kZstd: return "ZSTD";
    case Codec::kLz4Raw: return "LZ4_RAW";
  }
  return "UNKNOWN_CODEC";
}

std::string_view PageTypeName(PageType type) {
  switch (type) {
    case PageType::kDataPage: return "DATA_PAGE";
    case PageType::kIndexPage: return "INDEX_PAGE";
    case PageType::kDictionaryPage: return "DICTIONARY_PAGE";
    case PageType::kDataPageV2: return "DATA_PAGE_V2";
  }
  return "UNKNOWN_PAGE_TYPE";
}

std::string_view RepetitionName(Repetition repetition) {
  switch (repetition) {
    case Repetition::kRequired: return "required";
    case Repetition::kOptional: return "optional";
    case Repetition::kRepeated: return "repeated";
  }
  return "unknown";
}

namespace {
std::string_view UnitName(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kMillis: return "MILLIS";
    case TimeUnit::kMicros: return "MICROS";
    case TimeUnit::kNanos: return "NANOS";
  }
  return "?";
}
}  // namespace

std::string LogicalTypeName(const LogicalType& type) {
  using K = LogicalType::Kind;
  switch (type.kind) {
    case K::kNone: return "";
    case K::kString: return "STRING";
    case K::kMap: return "MAP";
    case K::kList: return "LIST";
    case K::kEnum: return "ENUM";
    case K::kDecimal:
      return "DECIMAL(" + std::to_string(type.precision) + "," + std::to_string(type.scale) + ")";
    case K::kDate: return "DATE";
    case K::kTime:
    case K::kTimestamp:
      return std::string(type.kind == K::kTime ? "TIME(" : "TIMESTAMP(") +
             std::string(UnitName(type.unit)) + (type.utc_adjusted ? ",UTC)" : ",local)");
    case K::kInteger:
      return "INT(" + std::to_string(type.bit_width) + (type.is_signed ? ",signed)" : ",unsigned)");
    case K::kUnknown: return "UNKNOWN";
    case K::kJson: return "JSON";
    case K::kBson: return "BSON";
    case K::kUuid: return "UUID";
    case K::kFloat16: return "FLOAT16";
    case K::kInterval: return "INTERVAL";
    case K::kOther: return "OTHER";
  }
  return "";
}

int32_t FixedWidthOf(PhysicalType type, int32_t type_length) {
  switch (type) {
    case PhysicalType::kBoolean: return 1;
    case PhysicalType::kInt32: return 4;
    case PhysicalType::kInt64: return 8;
    case PhysicalType::kInt96: return 12;
    case PhysicalType::kFloat: return 4;
    case PhysicalType::kDouble: return 8;
    case PhysicalType::kByteArray: return 0;
    case PhysicalType::kFixedLenByteArray: return type_length;
  }
  return 0;
}

}  // namespace shoal::parquet
