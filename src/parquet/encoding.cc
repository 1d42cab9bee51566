#include "parquet/encoding.h"

#include <algorithm>
#include <array>
#include <utility>
#include <cstring>

#include "util/cpu.h"
#include "util/error.h"

namespace shoal::parquet {

namespace {

[[noreturn]] void Corrupt(const std::string& what) { throw InvalidError(what); }

uint64_t ReadUleb(const uint8_t* data, size_t size, size_t* pos, const char* what) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= size) Corrupt(std::string(what) + ": varint runs past the end of the data");
    uint8_t byte = data[(*pos)++];
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return result;
  }
  Corrupt(std::string(what) + ": varint longer than 10 bytes");
}

int64_t ReadZigzagVarint(const uint8_t* data, size_t size, size_t* pos, const char* what) {
  uint64_t v = ReadUleb(data, size, pos, what);
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

// Reads `bit_width` bits (<= 64) starting at bit `bit_pos` of data, least-significant first.
// The caller has checked that the bits lie within `size` bytes.
inline uint64_t ReadBits(const uint8_t* data, size_t size, size_t bit_pos, int bit_width) {
  if (bit_width == 0) return 0;
  size_t byte = bit_pos >> 3;
  int shift = static_cast<int>(bit_pos & 7);
  uint64_t word = 0;
  if (byte + 8 <= size) {
    std::memcpy(&word, data + byte, 8);
  } else {
    std::memcpy(&word, data + byte, size - byte);
  }
  uint64_t v = word >> shift;
  int have = 64 - shift;
  if (have < bit_width) {
    uint64_t extra = byte + 8 < size ? data[byte + 8] : 0;
    v |= extra << have;
  }
  return bit_width == 64 ? v : v & ((uint64_t{1} << bit_width) - 1);
}

}  // namespace

void ValueBuffer::Reset(PhysicalType t, int32_t type_length) {
  type = t;
  width = FixedWidthOf(t, type_length);
  count = 0;
  data.clear();
  offsets.clear();
  if (t == PhysicalType::kByteArray) offsets.push_back(0);
}

void ValueBuffer::AppendByteArray(const uint8_t* bytes, size_t length) {
  AppendBytes(data, bytes, length);
  offsets.push_back(static_cast<int64_t>(data.size()));
  ++count;
}

int BitWidthOf(uint64_t max_value) {
  int width = 0;
  while (max_value != 0) {
    ++width;
    max_value >>= 1;
  }
  return width;
}

// ---- RLE / bit-packed hybrid ----

RleBitPackedDecoder::RleBitPackedDecoder(const uint8_t* data, size_t size, int bit_width)
    : data_(data), size_(size), bit_width_(bit_width) {
  if (bit_width < 0 || bit_width > 32) {
    Corrupt("RLE/bit-packed data declares bit width " + std::to_string(bit_width) +
            ", expected 0 to 32");
  }
}

bool RleBitPackedDecoder::NextRun() {
  if (pos_ >= size_) return false;
  uint64_t header = ReadUleb(data_, size_, &pos_, "RLE/bit-packed run header");
  if (header & 1) {
    uint64_t groups = header >> 1;
    if (groups > (uint64_t{1} << 40)) Corrupt("bit-packed run of " + std::to_string(groups) + " groups");
    uint64_t bytes = groups * static_cast<uint64_t>(bit_width_);
    uint64_t count = groups * 8;
    if (bytes > size_ - pos_) {
      // Writers may end the last bit-packed run early, at the last byte they need.
      bytes = size_ - pos_;
      count = bytes * 8 / static_cast<uint64_t>(bit_width_);
    }
    literal_count_ = static_cast<int64_t>(count);
    literal_bit_pos_ = pos_ * 8;
    literal_end_ = pos_ + bytes;
    pos_ += bytes;
    repeat_count_ = 0;
  } else {
    repeat_count_ = static_cast<int64_t>(header >> 1);
    size_t value_bytes = (static_cast<size_t>(bit_width_) + 7) / 8;
    if (value_bytes > size_ - pos_) Corrupt("RLE run value runs past the end of the data");
    uint64_t value = 0;
    for (size_t i = 0; i < value_bytes; ++i) value |= uint64_t{data_[pos_ + i]} << (8 * i);
    pos_ += value_bytes;
    repeat_value_ = value;
    literal_count_ = 0;
  }
  return true;
}

namespace {

// Unpacks `groups` groups of 8 values of W bits (W bytes per group, least-significant bit
// first). Each value is one unaligned 8-byte load, so the caller guarantees 8 readable bytes
// past the last group.
template <int W, typename T>
__attribute__((always_inline)) inline void UnpackGroups(const uint8_t* in, T* out, int64_t groups) {
  constexpr uint64_t kMask = W == 0 ? 0 : (W >= 64 ? ~uint64_t{0} : (uint64_t{1} << W) - 1);
  for (int64_t g = 0; g < groups; ++g, in += W, out += 8) {
    for (int i = 0; i < 8; ++i) {
      uint64_t word;
      std::memcpy(&word, in + (i * W) / 8, 8);
      out[i] = static_cast<T>((word >> ((i * W) % 8)) & kMask);
    }
  }
}

template <typename T, int... W>
__attribute__((always_inline)) inline void UnpackWidth(int bit_width, const uint8_t* in, T* out, int64_t groups,
                                                      std::integer_sequence<int, W...>) {
  ((bit_width == W ? (UnpackGroups<W, T>(in, out, groups), true) : false) || ...);
}

// One function per output type, each with every width inlined, compiled for baseline x86-64
// and AVX2 (see util/cpu.h).
SHOAL_CPU_CLONES void UnpackU32(int bit_width, const uint8_t* in, uint32_t* out, int64_t groups) {
  UnpackWidth(bit_width, in, out, groups, std::make_integer_sequence<int, 33>{});
}
SHOAL_CPU_CLONES void UnpackI16(int bit_width, const uint8_t* in, int16_t* out, int64_t groups) {
  UnpackWidth(bit_width, in, out, groups, std::make_integer_sequence<int, 17>{});
}
SHOAL_CPU_CLONES void UnpackU8(int bit_width, const uint8_t* in, uint8_t* out, int64_t groups) {
  UnpackWidth(bit_width, in, out, groups, std::make_integer_sequence<int, 9>{});
}

void Unpack(int bit_width, const uint8_t* in, uint32_t* out, int64_t groups) { UnpackU32(bit_width, in, out, groups); }
void Unpack(int bit_width, const uint8_t* in, int16_t* out, int64_t groups) { UnpackI16(bit_width, in, out, groups); }
void Unpack(int bit_width, const uint8_t* in, uint8_t* out, int64_t groups) { UnpackU8(bit_width, in, out, groups); }

}  // namespace

template <typename T>
void RleBitPackedDecoder::Get(T* out, int64_t n) {
  int64_t done = 0;
  while (done < n) {
    if (repeat_count_ > 0) {
      int64_t take = std::min(repeat_count_, n - done);
      std::fill(out + done, out + done + take, static_cast<T>(repeat_value_));
      repeat_count_ -= take;
      done += take;
    } else if (literal_count_ > 0) {
      int64_t take = std::min(literal_count_, n - done);
      // Whole groups of 8 from a byte boundary go through the unrolled unpacker.
      // (Only for widths the output type holds: the unpackers are instantiated for those.)
      if ((literal_bit_pos_ & 7) == 0 && take >= 8 && bit_width_ > 0 &&
          bit_width_ <= static_cast<int>(8 * sizeof(T))) {
        size_t byte = literal_bit_pos_ >> 3;
        int64_t groups = take / 8;
        if (byte + 8 > size_) {
          groups = 0;
        } else {
          groups = std::min<int64_t>(groups, static_cast<int64_t>((size_ - byte - 8) / bit_width_));
        }
        if (groups > 0) {
          Unpack(bit_width_, data_ + byte, out + done, groups);
          literal_bit_pos_ += static_cast<size_t>(groups) * 8 * bit_width_;
          literal_count_ -= groups * 8;
          done += groups * 8;
          continue;
        }
      }
      for (int64_t i = 0; i < take; ++i) {
        out[done + i] = static_cast<T>(ReadBits(data_, literal_end_, literal_bit_pos_, bit_width_));
        literal_bit_pos_ += bit_width_;
      }
      literal_count_ -= take;
      done += take;
    } else if (!NextRun()) {
      Corrupt("RLE/bit-packed data holds " + std::to_string(done) + " values, expected " +
              std::to_string(n));
    }
  }
}

template void RleBitPackedDecoder::Get<int16_t>(int16_t*, int64_t);
template void RleBitPackedDecoder::Get<uint32_t>(uint32_t*, int64_t);
template void RleBitPackedDecoder::Get<uint8_t>(uint8_t*, int64_t);

void DecodeBitPackedLevels(const uint8_t* data, size_t size, int bit_width, int64_t n,
                           int16_t* out) {
  uint64_t bits_needed = static_cast<uint64_t>(n) * static_cast<uint64_t>(bit_width);
  if ((bits_needed + 7) / 8 > size) {
    Corrupt("BIT_PACKED levels need " + std::to_string((bits_needed + 7) / 8) +
            " bytes, but only " + std::to_string(size) + " remain");
  }
  size_t bit = 0;
  for (int64_t i = 0; i < n; ++i) {
    int v = 0;
    for (int b = 0; b < bit_width; ++b, ++bit) {
      v = (v << 1) | ((data[bit >> 3] >> (7 - (bit & 7))) & 1);
    }
    out[i] = static_cast<int16_t>(v);
  }
}

// ---- PLAIN ----

void CompactPlainByteArrays(size_t base, size_t values_pos, size_t size, int64_t n, ValueBuffer* out) {
  if (n < 0) Corrupt("negative value count");
  size_t offsets_base = out->offsets.size();
  out->offsets.resize(offsets_base + static_cast<size_t>(n));
  int64_t* offsets = out->offsets.data() + offsets_base;
  uint8_t* buffer = out->data.data();
  size_t dst = base;
  size_t pos = values_pos;
  const size_t end = values_pos + size;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t length = 0;
    if (end - pos >= 4) std::memcpy(&length, buffer + pos, 4);
    if (end - pos < 4 || length > end - pos - 4) {
      out->data.resize(dst);
      out->offsets.resize(offsets_base + static_cast<size_t>(i));
      Corrupt("PLAIN BYTE_ARRAY value " + std::to_string(i) + " of " + std::to_string(n) +
              (end - pos < 4 ? std::string(": length prefix runs past the end of the page")
                             : " declares " + std::to_string(length) + " bytes, but only " +
                                   std::to_string(end - pos - 4) + " remain"));
    }
    pos += 4;
    std::memmove(buffer + dst, buffer + pos, length);  // dst < pos: the values only move down
    dst += length;
    pos += length;
    offsets[i] = static_cast<int64_t>(dst);
  }
  out->data.resize(dst);
  out->count += n;
}

size_t DecodePlain(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out) {
  if (n < 0) Corrupt("negative value count");
  switch (out->type) {
    case PhysicalType::kBoolean: {
      if ((static_cast<uint64_t>(n) + 7) / 8 > size) {
        Corrupt("PLAIN booleans: " + std::to_string(n) + " values need " +
                std::to_string((n + 7) / 8) + " bytes, but only " + std::to_string(size) +
                " remain");
      }
      size_t base = out->data.size();
      out->data.resize(base + n);
      for (int64_t i = 0; i < n; ++i) out->data[base + i] = (data[i >> 3] >> (i & 7)) & 1;
      out->count += n;
      return static_cast<size_t>((n + 7) / 8);
    }
    case PhysicalType::kByteArray: {
      // The values' bytes are a subset of the page, so `size` bounds them: size the buffer once
      // (with 16 bytes of slack for the short-value copy below) and trim at the end.
      size_t base = out->data.size();
      out->data.resize(base + size + 16);
      size_t offsets_base = out->offsets.size();
      out->offsets.resize(offsets_base + static_cast<size_t>(n));
      uint8_t* dst = out->data.data() + base;
      int64_t* offsets = out->offsets.data() + offsets_base;
      int64_t end = static_cast<int64_t>(base);
      size_t pos = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (size - pos < 4) {
          out->data.resize(static_cast<size_t>(end));
          out->offsets.resize(offsets_base + static_cast<size_t>(i));
          Corrupt("PLAIN BYTE_ARRAY value " + std::to_string(i) + " of " + std::to_string(n) +
                  ": length prefix runs past the end of the page");
        }
        uint32_t length;
        std::memcpy(&length, data + pos, 4);
        pos += 4;
        if (length > size - pos) {
          out->data.resize(static_cast<size_t>(end));
          out->offsets.resize(offsets_base + static_cast<size_t>(i));
          Corrupt("PLAIN BYTE_ARRAY value " + std::to_string(i) + " declares " +
                  std::to_string(length) + " bytes, but only " + std::to_string(size - pos) +
                  " remain");
        }
        if (length <= 16 && size - pos >= 16) {
          std::memcpy(dst, data + pos, 16);  // one fixed-size copy; the excess is overwritten
        } else {
          std::memcpy(dst, data + pos, length);
        }
        dst += length;
        end += length;
        offsets[i] = end;
        pos += length;
      }
      out->data.resize(static_cast<size_t>(end));
      out->count += n;
      return pos;
    }
    default: {
      uint64_t bytes = static_cast<uint64_t>(n) * static_cast<uint64_t>(out->width);
      if (out->width <= 0) Corrupt("invalid fixed length " + std::to_string(out->width));
      if (bytes > size) {
        Corrupt("PLAIN " + std::string(PhysicalTypeName(out->type)) + ": " + std::to_string(n) +
                " values need " + std::to_string(bytes) + " bytes, but only " +
                std::to_string(size) + " remain");
      }
      AppendBytes(out->data, data, bytes);
      out->count += n;
      return bytes;
    }
  }
}

// ---- DELTA_BINARY_PACKED ----

namespace {

// Decodes up to `n` values (the page's declared count may be larger than needed) as uint64
// with wrapping arithmetic, calling emit(value) for each. Returns the bytes consumed.
template <typename Emit>
size_t DecodeDeltaValues(const uint8_t* data, size_t size, int64_t n, Emit&& emit) {
  const char* what = "DELTA_BINARY_PACKED";
  size_t pos = 0;
  uint64_t block_size = ReadUleb(data, size, &pos, what);
  uint64_t miniblocks = ReadUleb(data, size, &pos, what);
  uint64_t total = ReadUleb(data, size, &pos, what);
  uint64_t value = static_cast<uint64_t>(ReadZigzagVarint(data, size, &pos, what));
  if (block_size == 0 || block_size % 128 != 0 || block_size > (1u << 20)) {
    Corrupt("DELTA_BINARY_PACKED block size " + std::to_string(block_size) +
            " is not a positive multiple of 128");
  }
  if (miniblocks == 0 || block_size % miniblocks != 0 || (block_size / miniblocks) % 32 != 0) {
    Corrupt("DELTA_BINARY_PACKED has " + std::to_string(miniblocks) +
            " miniblocks per block of " + std::to_string(block_size) +
            ", which do not hold a multiple of 32 values each");
  }
  if (total < static_cast<uint64_t>(n)) {
    Corrupt("DELTA_BINARY_PACKED holds " + std::to_string(total) + " values, expected " +
            std::to_string(n));
  }
  if (n == 0) return pos;
  uint64_t per_miniblock = block_size / miniblocks;
  emit(value);
  int64_t produced = 1;
  while (produced < n) {
    uint64_t min_delta = static_cast<uint64_t>(ReadZigzagVarint(data, size, &pos, what));
    if (miniblocks > size - pos) Corrupt("DELTA_BINARY_PACKED bit widths run past the end");
    const uint8_t* widths = data + pos;
    pos += miniblocks;
    for (uint64_t m = 0; m < miniblocks && produced < n; ++m) {
      int width = widths[m];
      if (width > 64) Corrupt("DELTA_BINARY_PACKED bit width " + std::to_string(width));
      uint64_t bytes = per_miniblock * width / 8;
      if (bytes > size - pos) {
        Corrupt("DELTA_BINARY_PACKED miniblock of " + std::to_string(bytes) +
                " bytes runs past the end (" + std::to_string(size - pos) + " remain)");
      }
      size_t bit = 0;
      for (uint64_t i = 0; i < per_miniblock && produced < n; ++i) {
        value += min_delta + ReadBits(data + pos, bytes, bit, width);
        bit += width;
        emit(value);
        ++produced;
      }
      pos += bytes;
    }
  }
  return pos;
}

}  // namespace

size_t DecodeDeltaBinaryPacked(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out) {
  size_t base = out->data.size();
  out->data.resize(base + static_cast<size_t>(n) * out->width);
  uint8_t* dst = out->data.data() + base;
  int64_t i = 0;
  size_t used;
  if (out->type == PhysicalType::kInt32) {
    used = DecodeDeltaValues(data, size, n, [&](uint64_t v) {
      int32_t x = static_cast<int32_t>(static_cast<uint32_t>(v));
      std::memcpy(dst + 4 * i++, &x, 4);
    });
  } else if (out->type == PhysicalType::kInt64) {
    used = DecodeDeltaValues(data, size, n, [&](uint64_t v) {
      std::memcpy(dst + 8 * i++, &v, 8);
    });
  } else {
    throw InvalidError("DELTA_BINARY_PACKED is defined for INT32 and INT64, not " +
                       std::string(PhysicalTypeName(out->type)));
  }
  out->count += n;
  return used;
}

size_t DecodeDeltaInt64(const uint8_t* data, size_t size, int64_t n, std::vector<int64_t>* out) {
  out->clear();
  out->reserve(n);
  return DecodeDeltaValues(data, size, n,
                           [&](uint64_t v) { out->push_back(static_cast<int64_t>(v)); });
}

size_t DecodeDeltaLengthByteArray(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out) {
  std::vector<int64_t> lengths;
  size_t pos = DecodeDeltaInt64(data, size, n, &lengths);
  for (int64_t i = 0; i < n; ++i) {
    int64_t length = lengths[i];
    if (length < 0 || static_cast<uint64_t>(length) > size - pos) {
      Corrupt("DELTA_LENGTH_BYTE_ARRAY value " + std::to_string(i) + " declares " +
              std::to_string(length) + " bytes, but " + std::to_string(size - pos) + " remain");
    }
    out->AppendByteArray(data + pos, static_cast<size_t>(length));
    pos += static_cast<size_t>(length);
  }
  return pos;
}

size_t DecodeDeltaByteArray(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out) {
  std::vector<int64_t> prefixes;
  size_t pos = DecodeDeltaInt64(data, size, n, &prefixes);
  std::vector<int64_t> lengths;
  pos += DecodeDeltaInt64(data + pos, size - pos, n, &lengths);
  std::string previous;
  for (int64_t i = 0; i < n; ++i) {
    int64_t prefix = prefixes[i], length = lengths[i];
    if (prefix < 0 || static_cast<size_t>(prefix) > previous.size()) {
      Corrupt("DELTA_BYTE_ARRAY value " + std::to_string(i) + " has prefix length " +
              std::to_string(prefix) + ", but the previous value has " +
              std::to_string(previous.size()) + " bytes");
    }
    if (length < 0 || static_cast<uint64_t>(length) > size - pos) {
      Corrupt("DELTA_BYTE_ARRAY value " + std::to_string(i) + " declares a suffix of " +
              std::to_string(length) + " bytes, but " + std::to_string(size - pos) + " remain");
    }
    previous.resize(static_cast<size_t>(prefix));
    previous.append(reinterpret_cast<const char*>(data + pos), static_cast<size_t>(length));
    pos += static_cast<size_t>(length);
    out->AppendByteArray(reinterpret_cast<const uint8_t*>(previous.data()), previous.size());
  }
  return pos;
}

size_t DecodeByteStreamSplit(const uint8_t* data, size_t size, int64_t n, ValueBuffer* out) {
  if (out->type == PhysicalType::kByteArray || out->type == PhysicalType::kBoolean ||
      out->type == PhysicalType::kInt96) {
    throw InvalidError("BYTE_STREAM_SPLIT is not defined for " +
                       std::string(PhysicalTypeName(out->type)));
  }
  size_t width = static_cast<size_t>(out->width);
  uint64_t bytes = static_cast<uint64_t>(n) * width;
  if (bytes > size) {
    Corrupt("BYTE_STREAM_SPLIT: " + std::to_string(n) + " values need " + std::to_string(bytes) +
            " bytes, but only " + std::to_string(size) + " remain");
  }
  // The streams span the whole page body: stream k starts at k * (size / width).
  size_t stream_length = size / width;
  if (stream_length < static_cast<size_t>(n)) Corrupt("BYTE_STREAM_SPLIT streams too short");
  size_t base = out->data.size();
  out->data.resize(base + bytes);
  uint8_t* dst = out->data.data() + base;
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < width; ++k) dst[i * width + k] = data[k * stream_length + i];
  }
  out->count += n;
  return size;
}

// ---- encoders ----

void EncodeRleBitPacked(const uint32_t* values, int64_t n, int bit_width, std::string* out) {
  auto put_varint = [&](uint64_t v) {
    while (v >= 0x80) {
      out->push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out->push_back(static_cast<char>(v));
  };
  size_t value_bytes = (static_cast<size_t>(bit_width) + 7) / 8;
  int64_t i = 0;
  while (i < n) {
    // A run of 8 or more equal values is written as an RLE run.
    int64_t run = 1;
    while (i + run < n && values[i + run] == values[i]) ++run;
    if (run >= 8) {
      put_varint(static_cast<uint64_t>(run) << 1);
      for (size_t b = 0; b < value_bytes; ++b) out->push_back(static_cast<char>(values[i] >> (8 * b)));
      i += run;
      continue;
    }
    // Otherwise bit-pack groups of 8 until the next long run (or the end).
    int64_t start = i;
    int64_t end = i;
    while (end < n) {
      int64_t r = 1;
      while (end + r < n && values[end + r] == values[end] && r < 8) ++r;
      if (r >= 8 && (end - start) % 8 == 0 && end > start) break;
      end += 1;
      if (end - start >= 8 * 63) break;
    }
    int64_t groups = (end - start + 7) / 8;
    put_varint((static_cast<uint64_t>(groups) << 1) | 1);
    size_t base = out->size();
    out->resize(base + static_cast<size_t>(groups) * bit_width, '\0');
    size_t bit = 0;
    for (int64_t k = 0; k < groups * 8; ++k) {
      uint64_t v = start + k < end ? values[start + k] : 0;
      for (int b = 0; b < bit_width; ++b, ++bit) {
        if ((v >> b) & 1) (*out)[base + (bit >> 3)] |= static_cast<char>(1 << (bit & 7));
      }
    }
    i = end;
  }
}

void EncodePlain(const ValueBuffer& values, int64_t begin, int64_t end, std::string* out) {
  if (values.type == PhysicalType::kBoolean) {
    size_t base = out->size();
    out->resize(base + static_cast<size_t>((end - begin + 7) / 8), '\0');
    for (int64_t i = begin; i < end; ++i) {
      if (values.data[i]) (*out)[base + ((i - begin) >> 3)] |= static_cast<char>(1 << ((i - begin) & 7));
    }
  } else if (values.type == PhysicalType::kByteArray) {
    for (int64_t i = begin; i < end; ++i) {
      uint32_t length = static_cast<uint32_t>(values.offsets[i + 1] - values.offsets[i]);
      out->append(reinterpret_cast<const char*>(&length), 4);
      out->append(reinterpret_cast<const char*>(values.data.data() + values.offsets[i]), length);
    }
  } else {
    out->append(reinterpret_cast<const char*>(values.data.data() + begin * values.width),
                static_cast<size_t>((end - begin) * values.width));
  }
}

}  // namespace shoal::parquet
