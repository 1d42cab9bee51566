// Parquet value and level encodings (Encodings.md). Decoders check every read against the bytes
// they were given and throw shoal::Error (kInvalid) on corrupt input; they never read past the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parquet/types.h"
#include "util/buffer.h"

namespace shoal::parquet {

/// Decoded values of one physical type, densely (no slots for nulls). Fixed-width types keep
/// `width` bytes per value in `data` (BOOLEAN one byte, 0 or 1); BYTE_ARRAY keeps the bytes of
/// all values in `data` and count+1 `offsets` into it.
struct ValueBuffer {
  PhysicalType type = PhysicalType::kInt32;
  int32_t width = 4;  // bytes per value; 0 for BYTE_ARRAY
  int64_t count = 0;
  ByteBuffer data;
  UninitVector<int64_t> offsets;  // BYTE_ARRAY only, starts with 0

  void Reset(PhysicalType t, int32_t type_length);
  bool is_byte_array() const { return type == PhysicalType::kByteArray; }
  void AppendByteArray(const uint8_t* bytes, size_t length);
};

/// Number of bits needed for values 0..max_value.
int BitWidthOf(uint64_t max_value);

/// Decoder of the RLE / bit-packed hybrid encoding (levels, dictionary indices, booleans).
class RleBitPackedDecoder {
 public:
  RleBitPackedDecoder(const uint8_t* data, size_t size, int bit_width);
  /// Reads exactly `n` values into `out`; throws if the data holds fewer.
  template <typename T>
  void Get(T* out, int64_t n);
  /// Bytes consumed so far (whole runs).
  size_t consumed() const { return pos_; }

 private:
  bool NextRun();
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  int bit_width_;
  // The current run: either `repeat_count` copies of `repeat_value`, or `literal_count` values
  // bit-packed at `literal_bits` (a bit offset into data_).
  int64_t repeat_count_ = 0;
  uint64_t repeat_value_ = 0;
  int64_t literal_count_ = 0;
  size_t literal_bit_pos_ = 0;
  size_t literal_end_ = 0;
};

/// The deprecated BIT_PACKED level encoding: values packed most-significant bit first.
void DecodeBitPackedLevels(const uint8_t* data, size_t size, int bit_width, int64_t n,
                           int16_t* out);

/// Appends `n` PLAIN-encoded values to `out`; returns the bytes consumed.
size_t DecodePlain(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out);
/// PLAIN BYTE_ARRAY values already in place: out->data[values_pos, values_pos + size) holds the
/// page's values (decompressed there); they are moved down to start at `base` (<= values_pos),
/// which saves copying them out of a separate page buffer. out->data ends after the last value.
void CompactPlainByteArrays(size_t base, size_t values_pos, size_t size, int64_t n, ValueBuffer* out);

/// DELTA_BINARY_PACKED for INT32/INT64: appends `n` values; returns the bytes consumed.
size_t DecodeDeltaBinaryPacked(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out);
/// DELTA_BINARY_PACKED into int64 (lengths, prefixes); returns the bytes consumed.
size_t DecodeDeltaInt64(const uint8_t* data, size_t size, int64_t n, std::vector<int64_t>* out);
size_t DecodeDeltaLengthByteArray(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out);
size_t DecodeDeltaByteArray(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out);
/// BYTE_STREAM_SPLIT for FLOAT, DOUBLE, INT32, INT64 and FIXED_LEN_BYTE_ARRAY.
size_t DecodeByteStreamSplit(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out);

// ---- encoders, for the writer ----

/// Appends the RLE / bit-packed hybrid encoding of `values` (each < 2^bit_width) to `out`.
void EncodeRleBitPacked(const uint32_t* values, int64_t n, int bit_width, std::string* out);
/// Appends the PLAIN encoding of values [begin, end) of `values` to `out`.
void EncodePlain(const ValueBuffer& values, int64_t begin, int64_t end, std::string* out);

}  // namespace shoal::parquet
