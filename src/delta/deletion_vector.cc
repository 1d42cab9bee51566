#include "delta/deletion_vector.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "util/crc32.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::delta {

namespace {

constexpr uint32_t kMagic = 1681511377;
constexpr uint32_t kCookieNoRuns = 12346;
constexpr uint32_t kCookieRuns = 12347;

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T Little() {
    Need(sizeof(T));
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const uint8_t* Take(size_t n) {
    Need(n);
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  size_t position() const { return pos_; }

 private:
  void Need(size_t n) const {
    if (n > size_ - pos_) {
      throw InvalidError("deletion vector bitmap ends at byte " + std::to_string(size_) + ", " + std::to_string(n) +
                         " more bytes were needed at byte " + std::to_string(pos_));
    }
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// One standard 32-bit RoaringBitmap (RoaringFormatSpec), its values ORed with `high`.
void DecodeRoaring32(Cursor& in, uint64_t high, std::vector<uint64_t>* out) {
  uint32_t cookie = in.Little<uint32_t>();
  uint32_t containers;
  const uint8_t* run_flags = nullptr;
  bool has_runs = (cookie & 0xffff) == kCookieRuns;
  if (has_runs) {
    containers = (cookie >> 16) + 1;
    run_flags = in.Take((containers + 7) / 8);
  } else if (cookie == kCookieNoRuns) {
    containers = in.Little<uint32_t>();
  } else {
    throw InvalidError("deletion vector bitmap has cookie " + std::to_string(cookie) + ", expected 12346 or 12347");
  }
  if (containers > 65536) throw InvalidError("deletion vector bitmap declares " + std::to_string(containers) + " containers");
  std::vector<std::pair<uint16_t, uint32_t>> headers;  // key, cardinality
  for (uint32_t i = 0; i < containers; ++i) {
    uint16_t key = in.Little<uint16_t>();
    uint32_t cardinality = static_cast<uint32_t>(in.Little<uint16_t>()) + 1;
    headers.emplace_back(key, cardinality);
  }
  if (!has_runs || containers >= 4) in.Take(size_t{4} * containers);  // offsets: not needed in order
  for (uint32_t i = 0; i < containers; ++i) {
    uint64_t base = high | (static_cast<uint64_t>(headers[i].first) << 16);
    bool run = run_flags && (run_flags[i / 8] >> (i % 8)) & 1;
    if (run) {
      uint16_t runs = in.Little<uint16_t>();
      for (uint16_t r = 0; r < runs; ++r) {
        uint32_t start = in.Little<uint16_t>();
        uint32_t length = in.Little<uint16_t>();
        for (uint32_t v = start; v <= start + length && v <= 0xffff; ++v) out->push_back(base | v);
      }
    } else if (headers[i].second > 4096) {
      const uint8_t* words = in.Take(8192);
      for (uint32_t w = 0; w < 1024; ++w) {
        uint64_t word;
        std::memcpy(&word, words + 8 * w, 8);
        while (word) {
          int bit = __builtin_ctzll(word);
          out->push_back(base | (w * 64 + static_cast<uint32_t>(bit)));
          word &= word - 1;
        }
      }
    } else {
      for (uint32_t k = 0; k < headers[i].second; ++k) out->push_back(base | in.Little<uint16_t>());
    }
  }
}

}  // namespace

std::string Z85Decode(std::string_view text) {
  static const char* kAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (text.size() % 5 != 0) throw InvalidError("Z85 text of " + std::to_string(text.size()) + " characters is not a multiple of 5");
  int8_t digit[256];
  std::memset(digit, -1, sizeof(digit));
  for (int i = 0; i < 85; ++i) digit[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  std::string out;
  for (size_t i = 0; i < text.size(); i += 5) {
    uint64_t value = 0;
    for (size_t k = 0; k < 5; ++k) {
      int8_t d = digit[static_cast<uint8_t>(text[i + k])];
      if (d < 0) throw InvalidError(std::string("invalid Z85 character '") + text[i + k] + "'");
      value = value * 85 + static_cast<uint64_t>(d);
    }
    if (value > 0xffffffffULL) throw InvalidError("Z85 group overflows 32 bits");
    for (int b = 3; b >= 0; --b) out.push_back(static_cast<char>((value >> (8 * b)) & 0xff));
  }
  return out;
}

std::vector<uint64_t> DecodeRoaringBitmapArray(const uint8_t* data, size_t size) {
  Cursor in(data, size);
  uint32_t magic = in.Little<uint32_t>();
  if (magic != kMagic) {
    throw InvalidError("deletion vector has magic number " + std::to_string(magic) + ", expected 1681511377");
  }
  uint64_t buckets = in.Little<uint64_t>();
  if (buckets > size) throw InvalidError("deletion vector declares " + std::to_string(buckets) + " buckets");
  std::vector<uint64_t> rows;
  for (uint64_t b = 0; b < buckets; ++b) {
    uint32_t key = in.Little<uint32_t>();
    DecodeRoaring32(in, static_cast<uint64_t>(key) << 32, &rows);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::vector<uint64_t> LoadDeletionVector(const std::string& table_path, const DeletionVectorDescriptor& dv) {
  std::string what = "deletion vector (storage '" + dv.storage_type + "', '" + dv.path_or_inline + "')";
  try {
    if (dv.storage_type == "i") {
      std::string bytes = Z85Decode(dv.path_or_inline);
      return DecodeRoaringBitmapArray(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    std::string path;
    if (dv.storage_type == "u") {
      // <random prefix><20 characters: the file's UUID in Z85>
      if (dv.path_or_inline.size() < 20) throw InvalidError("relative deletion vector path is shorter than 20 characters");
      std::string prefix = dv.path_or_inline.substr(0, dv.path_or_inline.size() - 20);
      std::string uuid = Z85Decode(dv.path_or_inline.substr(dv.path_or_inline.size() - 20));
      static const char* kHex = "0123456789abcdef";
      std::string text;
      for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
        text.push_back(kHex[static_cast<uint8_t>(uuid[i]) >> 4]);
        text.push_back(kHex[static_cast<uint8_t>(uuid[i]) & 15]);
      }
      path = (std::filesystem::path(table_path) / prefix / ("deletion_vector_" + text + ".bin")).string();
    } else if (dv.storage_type == "p") {
      path = dv.path_or_inline.rfind("file:", 0) == 0 ? dv.path_or_inline.substr(dv.path_or_inline.find_first_not_of('/', 5) - 1)
                                                       : dv.path_or_inline;
    } else {
      throw UnsupportedError("unknown deletion vector storage type '" + dv.storage_type + "'");
    }
    RandomAccessFile file(path);
    int64_t offset = dv.offset.value_or(1);
    std::vector<uint8_t> header = file.ReadAt(static_cast<uint64_t>(offset), 4);
    uint32_t size = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) | header[3];
    if (size != static_cast<uint64_t>(dv.size_in_bytes)) {
      throw InvalidError("'" + path + "' holds " + std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                         ", the log declares " + std::to_string(dv.size_in_bytes));
    }
    std::vector<uint8_t> body = file.ReadAt(static_cast<uint64_t>(offset) + 4, size + 4);
    uint32_t stored = (uint32_t{body[size]} << 24) | (uint32_t{body[size + 1]} << 16) | (uint32_t{body[size + 2]} << 8) |
                      body[size + 3];
    if (Crc32(0, body.data(), size) != stored) throw InvalidError("'" + path + "' fails its CRC-32 check");
    std::vector<uint64_t> rows = DecodeRoaringBitmapArray(body.data(), size);
    if (static_cast<int64_t>(rows.size()) != dv.cardinality) {
      throw InvalidError("'" + path + "' holds " + std::to_string(rows.size()) + " rows, the log declares " +
                         std::to_string(dv.cardinality));
    }
    return rows;
  } catch (const Error& e) {
    throw WithContext(e, what);
  }
}

}  // namespace shoal::delta
