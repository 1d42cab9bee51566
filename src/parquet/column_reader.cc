#include "parquet/column_reader.h"

#include <algorithm>
#include <cstring>

#include "parquet/compression.h"
#include "util/cpu.h"
#include "util/crc32.h"
#include "util/error.h"

namespace shoal::parquet {

namespace {

// Hot loops of dictionary decoding, also compiled for AVX2 (unsigned max, gathers).

SHOAL_CPU_CLONES uint32_t MaxIndex(const uint32_t* indices, int64_t n) {
  uint32_t max_index = 0;
  for (int64_t i = 0; i < n; ++i) max_index = std::max(max_index, indices[i]);
  return max_index;
}

SHOAL_CPU_CLONES void Gather64(const uint64_t* dict, const uint32_t* indices, int64_t n, uint64_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = dict[indices[i]];
}

SHOAL_CPU_CLONES void Gather32(const uint32_t* dict, const uint32_t* indices, int64_t n, uint32_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = dict[indices[i]];
}

class ChunkDecoder {
 public:
  ChunkDecoder(const ColumnMetaData& meta, const ColumnDescriptor& column,
               const ChunkReadOptions& options)
      : meta_(meta), column_(column), options_(options) {
    out_.values.Reset(column.physical, column.type_length);
    dictionary_.Reset(column.physical, column.type_length);
    Reserve();
  }

  LeafData Decode(const uint8_t* data, size_t size) {
    size_t pos = 0;
    int page_index = 0;
    while (out_.num_levels < meta_.num_values) {
      if (pos >= size) {
        throw InvalidError("column chunk ends after " + std::to_string(out_.num_levels) + " of " +
                           std::to_string(meta_.num_values) + " values (" +
                           std::to_string(size) + " bytes)");
      }
      try {
        pos = DecodePage(data, size, pos);
      } catch (const Error& e) {
        throw WithContext(e, "page " + std::to_string(page_index) + " at chunk offset " +
                                 std::to_string(pos));
      }
      ++page_index;
    }
    if (out_.num_levels != meta_.num_values) {
      throw InvalidError("column chunk holds " + std::to_string(out_.num_levels) +
                         " values, its metadata declares " + std::to_string(meta_.num_values));
    }
    return std::move(out_);
  }

 private:
  size_t DecodePage(const uint8_t* data, size_t size, size_t pos) {
    size_t header_size = 0;
    PageHeader header = ParsePageHeader(data + pos, size - pos, &header_size);
    pos += header_size;
    size_t body_size = static_cast<size_t>(header.compressed_page_size);
    if (body_size > size - pos) {
      throw InvalidError(std::string(PageTypeName(header.type)) + " declares " +
                         std::to_string(body_size) + " bytes, but only " +
                         std::to_string(size - pos) + " remain in the column chunk");
    }
    const uint8_t* body = data + pos;
    if (header.crc && options_.verify_checksums) CheckCrc(header, body, body_size);
    switch (header.type) {
      case PageType::kDictionaryPage: DictionaryPage(header, body, body_size); break;
      case PageType::kDataPage: DataPageV1(header, body, body_size); break;
      case PageType::kDataPageV2: DataPageV2(header, body, body_size); break;
      case PageType::kIndexPage: break;
    }
    return pos + body_size;
  }

  static void CheckCrc(const PageHeader& header, const uint8_t* body, size_t size) {
    uint32_t computed = Crc32(0, body, size);
    uint32_t stored = static_cast<uint32_t>(*header.crc);
    if (computed != stored) {
      throw InvalidError("CRC mismatch: the page header stores " + std::to_string(stored) +
                         ", the page's bytes give " + std::to_string(computed) +
                         " (the file is corrupt; the check can be skipped)");
    }
  }

  // Decompresses into scratch_ when needed; returns the uncompressed bytes.
  const uint8_t* Uncompressed(const uint8_t* body, size_t size, size_t uncompressed_size) {
    if (meta_.codec == Codec::kUncompressed) {
      if (size != uncompressed_size) {
        throw InvalidError("uncompressed page holds " + std::to_string(size) +
                           " bytes, its header declares " + std::to_string(uncompressed_size));
      }
      return body;
    }
    // One buffer per thread, reused across pages, chunks and row groups: a fresh buffer per
    // page costs a page fault per 4 KiB.
    thread_local std::vector<uint8_t> scratch;
    if (scratch.size() < uncompressed_size) scratch.resize(uncompressed_size);
    if (scratch.capacity() > (size_t{64} << 20) && uncompressed_size < (size_t{1} << 20)) {
      std::vector<uint8_t>(uncompressed_size).swap(scratch);  // give back an outsized buffer
    }
    Decompress(meta_.codec, body, size, scratch.data(), uncompressed_size);
    return scratch.data();
  }

  void DictionaryPage(const PageHeader& header, const uint8_t* body, size_t size) {
    if (!header.dictionary_page_header) throw InvalidError("dictionary page without its header");
    const DictionaryPageHeader& d = *header.dictionary_page_header;
    if (d.num_values < 0) {
      throw InvalidError("dictionary page declares " + std::to_string(d.num_values) + " values");
    }
    if (d.encoding != Encoding::kPlain && d.encoding != Encoding::kPlainDictionary) {
      throw UnsupportedError("dictionary page encoding " + std::string(EncodingName(d.encoding)));
    }
    const uint8_t* bytes =
        Uncompressed(body, size, static_cast<size_t>(header.uncompressed_page_size));
    dictionary_.Reset(column_.physical, column_.type_length);
    DecodePlain(bytes, static_cast<size_t>(header.uncompressed_page_size), d.num_values,
                &dictionary_);
    has_dictionary_ = true;
  }

  // Decodes `n` levels at the end of `levels`, in the page's encoding.
  void DecodeLevels(Encoding encoding, int max_level, const uint8_t* data, size_t size,
                    int64_t n, UninitVector<int16_t>* levels, const char* what) {
    size_t base = levels->size();
    levels->resize(base + n);
    int bit_width = BitWidthOf(static_cast<uint64_t>(max_level));
    if (encoding == Encoding::kRle) {
      RleBitPackedDecoder decoder(data, size, bit_width);
      decoder.Get(levels->data() + base, n);
    } else if (encoding == Encoding::kBitPacked) {
      DecodeBitPackedLevels(data, size, bit_width, n, levels->data() + base);
    } else {
      throw UnsupportedError(std::string(what) + " level encoding " +
                             std::string(EncodingName(encoding)));
    }
    // Levels above the maximum can only appear when the bit width allows values past it.
    if (max_level == (1 << bit_width) - 1) return;
    for (int64_t i = 0; i < n; ++i) {
      int16_t level = (*levels)[base + i];
      if (level < 0 || level > max_level) {
        throw InvalidError(std::string(what) + " level " + std::to_string(level) +
                           " exceeds the column's maximum " + std::to_string(max_level));
      }
    }
  }

  // v1 levels are prefixed by their byte length (RLE) or sized by count (BIT_PACKED).
  size_t LevelsV1(Encoding encoding, int max_level, const uint8_t* data, size_t size, int64_t n,
                  UninitVector<int16_t>* levels, const char* what) {
    if (encoding == Encoding::kRle) {
      if (size < 4) throw InvalidError(std::string(what) + " levels: length prefix missing");
      uint32_t length;
      std::memcpy(&length, data, 4);
      if (length > size - 4) {
        throw InvalidError(std::string(what) + " levels declare " + std::to_string(length) +
                           " bytes, but only " + std::to_string(size - 4) + " remain");
      }
      DecodeLevels(encoding, max_level, data + 4, length, n, levels, what);
      return 4 + length;
    }
    size_t bytes = (static_cast<size_t>(n) * BitWidthOf(max_level) + 7) / 8;
    DecodeLevels(encoding, max_level, data, size, n, levels, what);
    return bytes;
  }

  int64_t CountNonNull(int64_t first_level, int64_t n) const {
    if (column_.max_definition_level == 0) return n;
    const int16_t* def = out_.definition_levels.data() + first_level;
    int16_t max = column_.max_definition_level;
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += def[i] == max;
    return count;
  }

  void DataPageV1(const PageHeader& header, const uint8_t* body, size_t size) {
    if (!header.data_page_header) throw InvalidError("data page without its header");
    const DataPageHeader& d = *header.data_page_header;
    CheckCount(d.num_values);
    size_t length = static_cast<size_t>(header.uncompressed_page_size);
    size_t in_place_base = 0;
    const uint8_t* bytes = DecompressesInPlace(d.encoding) ? DecompressIntoValues(body, size, length, &in_place_base)
                                                           : Uncompressed(body, size, length);
    size_t pos = 0;
    int64_t n = d.num_values;
    if (column_.max_repetition_level > 0) {
      pos += LevelsV1(d.repetition_level_encoding, column_.max_repetition_level, bytes, length, n,
                      &out_.repetition_levels, "repetition");
    }
    if (column_.max_definition_level > 0) {
      pos += LevelsV1(d.definition_level_encoding, column_.max_definition_level, bytes + pos,
                      length - pos, n, &out_.definition_levels, "definition");
    }
    if (DecompressesInPlace(d.encoding)) {
      CompactPlainByteArrays(in_place_base, in_place_base + pos, length - pos, CountNonNull(out_.num_levels, n),
                             &out_.values);
    } else {
      Values(d.encoding, bytes + pos, length - pos, CountNonNull(out_.num_levels, n));
    }
    out_.num_levels += n;
  }

  // PLAIN byte arrays of a compressed page are decompressed straight into the output buffer and
  // moved down over their length prefixes there, rather than copied out of a page buffer: one
  // pass less over the largest values (images).
  bool DecompressesInPlace(Encoding encoding) const {
    return encoding == Encoding::kPlain && column_.physical == PhysicalType::kByteArray &&
           meta_.codec != Codec::kUncompressed;
  }

  // Decompresses a page to the end of the output values; returns where it lies, and its offset
  // in the buffer in `base`.
  const uint8_t* DecompressIntoValues(const uint8_t* body, size_t size, size_t uncompressed_size, size_t* base) {
    ByteBuffer& data = out_.values.data;
    *base = data.size();
    data.resize(*base + uncompressed_size);
    try {
      Decompress(meta_.codec, body, size, data.data() + *base, uncompressed_size);
    } catch (...) {
      data.resize(*base);
      throw;
    }
    return data.data() + *base;
  }

  void DataPageV2(const PageHeader& header, const uint8_t* body, size_t size) {
    if (!header.data_page_header_v2) throw InvalidError("data page v2 without its header");
    const DataPageHeaderV2& d = *header.data_page_header_v2;
    CheckCount(d.num_values);
    if (d.repetition_levels_byte_length < 0 || d.definition_levels_byte_length < 0 ||
        static_cast<uint64_t>(d.repetition_levels_byte_length) +
                static_cast<uint64_t>(d.definition_levels_byte_length) >
            size) {
      throw InvalidError("data page v2 declares " +
                         std::to_string(d.repetition_levels_byte_length) + " + " +
                         std::to_string(d.definition_levels_byte_length) +
                         " bytes of levels, but the page has " + std::to_string(size));
    }
    size_t rep_bytes = static_cast<size_t>(d.repetition_levels_byte_length);
    size_t def_bytes = static_cast<size_t>(d.definition_levels_byte_length);
    int64_t n = d.num_values;
    if (column_.max_repetition_level > 0) {
      DecodeLevels(Encoding::kRle, column_.max_repetition_level, body, rep_bytes, n,
                   &out_.repetition_levels, "repetition");
    }
    if (column_.max_definition_level > 0) {
      DecodeLevels(Encoding::kRle, column_.max_definition_level, body + rep_bytes, def_bytes, n,
                   &out_.definition_levels, "definition");
    }
    const uint8_t* values = body + rep_bytes + def_bytes;
    size_t values_size = size - rep_bytes - def_bytes;
    int64_t uncompressed_values =
        static_cast<int64_t>(header.uncompressed_page_size) - static_cast<int64_t>(rep_bytes + def_bytes);
    if (uncompressed_values < 0) {
      throw InvalidError("data page v2 is smaller uncompressed than its levels");
    }
    // Levels are never compressed; an empty body is not decompressed.
    if (d.is_compressed && values_size > 0 && DecompressesInPlace(d.encoding)) {
      size_t base = 0;
      DecompressIntoValues(values, values_size, static_cast<size_t>(uncompressed_values), &base);
      CompactPlainByteArrays(base, base, static_cast<size_t>(uncompressed_values), CountNonNull(out_.num_levels, n),
                             &out_.values);
      out_.num_levels += n;
      return;
    }
    if (d.is_compressed && values_size > 0) {
      values = Uncompressed(values, values_size, static_cast<size_t>(uncompressed_values));
      values_size = static_cast<size_t>(uncompressed_values);
    }
    Values(d.encoding, values, values_size, CountNonNull(out_.num_levels, n));
    out_.num_levels += n;
  }

  void CheckCount(int32_t num_values) const {
    if (num_values < 0) {
      throw InvalidError("data page declares " + std::to_string(num_values) + " values");
    }
    if (out_.num_levels + num_values > meta_.num_values) {
      throw InvalidError("data page brings the chunk to " +
                         std::to_string(out_.num_levels + num_values) +
                         " values, its metadata declares " + std::to_string(meta_.num_values));
    }
  }

  void Values(Encoding encoding, const uint8_t* data, size_t size, int64_t n) {
    ValueBuffer& out = out_.values;
    int64_t before = out.count;
    switch (encoding) {
      case Encoding::kPlain: DecodePlain(data, size, n, &out); break;
      case Encoding::kPlainDictionary:
      case Encoding::kRleDictionary: DictionaryIndices(data, size, n); break;
      case Encoding::kRle: {
        if (column_.physical != PhysicalType::kBoolean) {
          throw UnsupportedError("RLE value encoding for " +
                                 std::string(PhysicalTypeName(column_.physical)));
        }
        if (size < 4) throw InvalidError("RLE booleans: length prefix missing");
        uint32_t length;
        std::memcpy(&length, data, 4);
        if (length > size - 4) throw InvalidError("RLE booleans run past the end of the page");
        RleBitPackedDecoder decoder(data + 4, length, 1);
        size_t base = out.data.size();
        out.data.resize(base + n);
        decoder.Get(out.data.data() + base, n);
        out.count += n;
        break;
      }
      case Encoding::kDeltaBinaryPacked: DecodeDeltaBinaryPacked(data, size, n, &out); break;
      case Encoding::kDeltaLengthByteArray:
        RequireByteArray(encoding);
        DecodeDeltaLengthByteArray(data, size, n, &out);
        break;
      case Encoding::kDeltaByteArray:
        if (column_.physical == PhysicalType::kFixedLenByteArray) {
          DeltaByteArrayFixed(data, size, n);
        } else {
          RequireByteArray(encoding);
          DecodeDeltaByteArray(data, size, n, &out);
        }
        break;
      case Encoding::kByteStreamSplit: DecodeByteStreamSplit(data, size, n, &out); break;
      default:
        throw UnsupportedError("value encoding " + std::string(EncodingName(encoding)) + " (" +
                               std::to_string(static_cast<int>(encoding)) + ")");
    }
    if (out.count - before != n) {
      throw InvalidError("page decoded " + std::to_string(out.count - before) +
                         " values, expected " + std::to_string(n));
    }
  }

  void RequireByteArray(Encoding encoding) const {
    if (column_.physical != PhysicalType::kByteArray) {
      throw InvalidError(std::string(EncodingName(encoding)) + " is defined for BYTE_ARRAY, not " +
                         std::string(PhysicalTypeName(column_.physical)));
    }
  }

  // DELTA_BYTE_ARRAY on FIXED_LEN_BYTE_ARRAY: decode as byte arrays, then check the lengths.
  void DeltaByteArrayFixed(const uint8_t* data, size_t size, int64_t n) {
    ValueBuffer tmp;
    tmp.Reset(PhysicalType::kByteArray, 0);
    DecodeDeltaByteArray(data, size, n, &tmp);
    for (int64_t i = 0; i < n; ++i) {
      int64_t length = tmp.offsets[i + 1] - tmp.offsets[i];
      if (length != column_.type_length) {
        throw InvalidError("DELTA_BYTE_ARRAY value of " + std::to_string(length) +
                           " bytes in a FIXED_LEN_BYTE_ARRAY(" +
                           std::to_string(column_.type_length) + ") column");
      }
    }
    AppendBytes(out_.values.data, tmp.data.data(), tmp.data.size());
    out_.values.count += n;
  }

  void DictionaryIndices(const uint8_t* data, size_t size, int64_t n) {
    if (!has_dictionary_) throw InvalidError("dictionary-encoded page, but the chunk has no dictionary page");
    if (n == 0) return;
    if (size < 1) throw InvalidError("dictionary indices: bit width missing");
    int bit_width = data[0];
    if (bit_width > 32) {
      throw InvalidError("dictionary indices declare bit width " + std::to_string(bit_width));
    }
    RleBitPackedDecoder decoder(data + 1, size - 1, bit_width);
    // Indices are decoded a batch at a time into a buffer that stays in L1, checked, and
    // gathered at once.
    constexpr int64_t kBatch = 1024;
    uint32_t indices[kBatch];
    ValueBuffer& out = out_.values;
    const uint64_t dict_size = static_cast<uint64_t>(dictionary_.count);
    size_t width = static_cast<size_t>(out.width);
    if (!out.is_byte_array()) out.data.reserve(out.data.size() + n * width);
    for (int64_t done = 0; done < n; done += kBatch) {
      int64_t k = std::min(kBatch, n - done);
      decoder.Get(indices, k);
      if (MaxIndex(indices, k) >= dict_size) {
        int64_t at = std::find_if(indices, indices + k, [&](uint32_t x) { return x >= dict_size; }) - indices;
        throw InvalidError("dictionary index " + std::to_string(indices[at]) + " at value " +
                           std::to_string(done + at) + ", but the dictionary has " + std::to_string(dict_size) +
                           " entries");
      }
      if (out.is_byte_array()) {
        GatherByteArrays(indices, k);
        continue;
      }
      size_t base = out.data.size();
      out.data.resize(base + k * width);
      uint8_t* dst = out.data.data() + base;
      const uint8_t* dict = dictionary_.data.data();
      // The buffers come from the allocator (16-byte aligned) at multiples of the width.
      switch (width) {
        case 4:
          Gather32(reinterpret_cast<const uint32_t*>(dict), indices, k, reinterpret_cast<uint32_t*>(dst));
          break;
        case 8:
          Gather64(reinterpret_cast<const uint64_t*>(dict), indices, k, reinterpret_cast<uint64_t*>(dst));
          break;
        default:
          for (int64_t i = 0; i < k; ++i) std::memcpy(dst + width * i, dict + width * indices[i], width);
      }
      out.count += k;
    }
  }

  void GatherByteArrays(const uint32_t* indices, int64_t n) {
    ValueBuffer& out = out_.values;
    const int64_t* offsets = dictionary_.offsets.data();
    const uint8_t* bytes = dictionary_.data.data();
    size_t total = 0;
    for (int64_t i = 0; i < n; ++i) total += static_cast<size_t>(offsets[indices[i] + 1] - offsets[indices[i]]);
    size_t base = out.data.size();
    out.data.resize(base + total);
    size_t offsets_base = out.offsets.size();
    out.offsets.resize(offsets_base + n);
    uint8_t* dst = out.data.data() + base;
    int64_t* dst_offsets = out.offsets.data() + offsets_base;
    int64_t position = static_cast<int64_t>(base);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t k = indices[i];
      size_t length = static_cast<size_t>(offsets[k + 1] - offsets[k]);
      std::memcpy(dst, bytes + offsets[k], length);
      dst += length;
      position += static_cast<int64_t>(length);
      dst_offsets[i] = position;
    }
    out.count += n;
  }


  // Sizes the output buffers once from the chunk's metadata, so decoding never reallocates.
  // Reserving touches no memory, and the metadata is capped so that a corrupt size costs
  // nothing but address space.
  void Reserve() {
    constexpr int64_t kCap = int64_t{1} << 30;
    int64_t n = std::min(meta_.num_values, kCap);
    if (column_.max_definition_level > 0) out_.definition_levels.reserve(n);
    if (column_.max_repetition_level > 0) out_.repetition_levels.reserve(n);
    ValueBuffer& values = out_.values;
    if (values.is_byte_array()) {
      values.offsets.reserve(n + 1);
      values.data.reserve(std::clamp<int64_t>(meta_.total_uncompressed_size, 0, kCap));
    } else {
      values.data.reserve(std::min(n * values.width, kCap));
    }
  }

  const ColumnMetaData& meta_;
  const ColumnDescriptor& column_;
  const ChunkReadOptions& options_;
  LeafData out_;
  ValueBuffer dictionary_;
  bool has_dictionary_ = false;
};

}  // namespace

LeafData DecodeColumnChunk(const uint8_t* data, size_t size, const ColumnMetaData& meta,
                           const ColumnDescriptor& column, int64_t num_rows,
                           const ChunkReadOptions& options) {
  if (meta.num_values < 0) {
    throw InvalidError("column chunk declares " + std::to_string(meta.num_values) + " values");
  }
  // Without repetition every value is one row, which bounds what the pages may declare.
  if (column.max_repetition_level == 0 && meta.num_values != num_rows) {
    throw InvalidError("column chunk declares " + std::to_string(meta.num_values) +
                       " values, but its row group has " + std::to_string(num_rows) + " rows");
  }
  ChunkDecoder decoder(meta, column, options);
  return decoder.Decode(data, size);
}

}  // namespace shoal::parquet
