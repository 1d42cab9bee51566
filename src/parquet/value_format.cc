#include "parquet/value_format.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace shoal::parquet {

namespace {

// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t year = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = year + (*m <= 2);
}

void AppendPadded(int64_t value, int width, std::string* out) {
  char buf[32];
  bool negative = value < 0;
  uint64_t v = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (negative) out->push_back('-');
  for (int i = n; i < width; ++i) out->push_back('0');
  while (n > 0) out->push_back(buf[--n]);
}

int64_t UnitsPerSecond(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kMillis: return 1000;
    case TimeUnit::kMicros: return 1000000;
    case TimeUnit::kNanos: return 1000000000;
  }
  return 1;
}

// Appends HH:MM:SS[.fraction] for `seconds_of_day` plus `fraction` units.
void AppendClock(int64_t seconds_of_day, int64_t fraction, TimeUnit unit, std::string* out) {
  AppendPadded(seconds_of_day / 3600, 2, out);
  out->push_back(':');
  AppendPadded(seconds_of_day / 60 % 60, 2, out);
  out->push_back(':');
  AppendPadded(seconds_of_day % 60, 2, out);
  if (fraction == 0) return;
  out->push_back('.');
  switch (unit) {
    case TimeUnit::kMillis: AppendPadded(fraction * 1000, 6, out); break;
    case TimeUnit::kMicros: AppendPadded(fraction, 6, out); break;
    case TimeUnit::kNanos:
      if (fraction % 1000 == 0) {
        AppendPadded(fraction / 1000, 6, out);
      } else {
        AppendPadded(fraction, 9, out);
      }
      break;
  }
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

std::string FormatDate(int64_t days) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  std::string out;
  AppendPadded(y, 4, &out);
  out.push_back('-');
  AppendPadded(m, 2, &out);
  out.push_back('-');
  AppendPadded(d, 2, &out);
  return out;
}

std::string FormatTime(int64_t value, TimeUnit unit) {
  int64_t per_second = UnitsPerSecond(unit);
  int64_t seconds = FloorDiv(value, per_second);
  std::string out;
  AppendClock(seconds, value - seconds * per_second, unit, &out);
  return out;
}

std::string FormatTimestamp(int64_t value, TimeUnit unit, bool utc) {
  int64_t per_second = UnitsPerSecond(unit);
  int64_t seconds = FloorDiv(value, per_second);
  int64_t fraction = value - seconds * per_second;
  int64_t days = FloorDiv(seconds, 86400);
  std::string out = FormatDate(days);
  out.push_back('T');
  AppendClock(seconds - days * 86400, fraction, unit, &out);
  if (utc) out.push_back('Z');
  return out;
}

int64_t Int96ToMicros(const uint8_t* bytes) {
  int64_t nanos_of_day;
  int32_t julian_day;
  std::memcpy(&nanos_of_day, bytes, 8);
  std::memcpy(&julian_day, bytes + 8, 4);
  constexpr int64_t kJulianEpochDay = 2440588;
  // Spark's reading: microseconds since the epoch in wrapping 64-bit arithmetic. Spark itself
  // writes far dates (year 290000) through the same wrap, so this reads back what it wrote.
  uint64_t micros = static_cast<uint64_t>(static_cast<int64_t>(julian_day) - kJulianEpochDay) * 86400000000ULL +
                    static_cast<uint64_t>(nanos_of_day / 1000);
  return static_cast<int64_t>(micros);
}

std::string FormatInt96(const uint8_t* bytes) {
  int64_t nanos_of_day;
  std::memcpy(&nanos_of_day, bytes, 8);
  std::string out = FormatTimestamp(Int96ToMicros(bytes), TimeUnit::kMicros, false);
  int64_t sub_micro = nanos_of_day % 1000;
  if (sub_micro > 0) {
    if (out.find('.') == std::string::npos) out += ".000000";
    AppendPadded(sub_micro, 3, &out);
  }
  return out;
}


namespace {

std::string InsertDecimalPoint(std::string digits, bool negative, int32_t scale) {
  if (scale > 0) {
    if (static_cast<int32_t>(digits.size()) <= scale) {
      digits.insert(0, static_cast<size_t>(scale) - digits.size() + 1, '0');
    }
    digits.insert(digits.size() - static_cast<size_t>(scale), 1, '.');
  } else if (scale < 0) {
    if (digits != "0") digits.append(static_cast<size_t>(-scale), '0');
  }
  if (negative) digits.insert(0, 1, '-');
  return digits;
}

}  // namespace

std::string FormatDecimal(int64_t unscaled, int32_t scale) {
  bool negative = unscaled < 0;
  uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(unscaled) : static_cast<uint64_t>(unscaled);
  return InsertDecimalPoint(std::to_string(magnitude), negative, scale);
}

std::string FormatDecimalBigEndian(const uint8_t* bytes, size_t length, int32_t scale) {
  if (length == 0) return InsertDecimalPoint("0", false, scale);
  bool negative = (bytes[0] & 0x80) != 0;
  // Magnitude as big-endian bytes (two's complement negated when negative).
  std::vector<uint8_t> mag(bytes, bytes + length);
  if (negative) {
    for (uint8_t& b : mag) b = static_cast<uint8_t>(~b);
    for (size_t i = mag.size(); i-- > 0;) {
      if (++mag[i] != 0) break;
    }
  }
  // Repeated division by 10^9 gives the decimal digits, nine at a time.
  std::string digits;
  size_t first = 0;
  while (first < mag.size() && mag[first] == 0) ++first;
  while (first < mag.size()) {
    uint64_t remainder = 0;
    for (size_t i = first; i < mag.size(); ++i) {
      uint64_t cur = (remainder << 8) | mag[i];
      mag[i] = static_cast<uint8_t>(cur / 1000000000u);
      remainder = cur % 1000000000u;
    }
    while (first < mag.size() && mag[first] == 0) ++first;
    std::string chunk = std::to_string(remainder);
    if (first < mag.size()) chunk.insert(0, 9 - chunk.size(), '0');
    digits.insert(0, chunk);
  }
  if (digits.empty()) digits.push_back('0');  // (not = "0": GCC 12 warns falsely)
  return InsertDecimalPoint(digits, negative && digits != "0", scale);
}

std::string FormatUuid(const uint8_t* b) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 15]);
  }
  return out;
}

std::string Base64(std::string_view in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    value = mantissa ? NAN : INFINITY;
  } else {
    value = std::ldexp(static_cast<float>(mantissa + 1024), static_cast<int>(exponent) - 25);
  }
  return sign ? -value : value;
}

namespace {
template <typename T>
void AppendJsonFloating(T value, std::string* out) {
  if (std::isnan(value)) {
    out->append("\"NaN\"");
  } else if (std::isinf(value)) {
    out->append(value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buf[64];
    auto result = std::to_chars(buf, buf + sizeof(buf), value);
    out->append(buf, result.ptr);
  }
}
}  // namespace

void AppendJsonDouble(double value, std::string* out) { AppendJsonFloating(value, out); }
void AppendJsonFloat(float value, std::string* out) { AppendJsonFloating(value, out); }

void AppendJsonString(std::string_view s, std::string* out) {
  static const char* kHex = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out->append("\\\""); break;
        case '\\': out->append("\\\\"); break;
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        case '\b': out->append("\\b"); break;
        case '\f': out->append("\\f"); break;
        default:
          if (c < 0x20) {
            out->append("\\u00");
            out->push_back(kHex[c >> 4]);
            out->push_back(kHex[c & 15]);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    // A multi-byte UTF-8 sequence: copy it when well formed, else write U+FFFD.
    size_t length = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    bool ok = length > 0 && i + length <= s.size();
    for (size_t k = 1; ok && k < length; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && length == 3) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
    }
    if (ok && length == 4) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out->append(s.data() + i, length);
      i += length;
    } else {
      out->append("\xef\xbf\xbd");
      ++i;
    }
  }
  out->push_back('"');
}

namespace {

void AppendPrimitive(const ColumnVector& column, int64_t row, std::string* out) {
  using K = LogicalType::Kind;
  const Field& f = *column.field;
  const LogicalType& logical = f.logical;
  switch (f.physical) {
    case PhysicalType::kBoolean: out->append(column.data[row] ? "true" : "false"); return;
    case PhysicalType::kInt32: {
      int32_t v = column.Value<int32_t>(row);
      if (logical.kind == K::kDate) {
        AppendJsonString(FormatDate(v), out);
      } else if (logical.kind == K::kDecimal) {
        AppendJsonString(FormatDecimal(v, logical.scale), out);
      } else if (logical.kind == K::kTime) {
        AppendJsonString(FormatTime(v, logical.unit), out);
      } else if (logical.kind == K::kInteger && !logical.is_signed) {
        out->append(std::to_string(static_cast<uint32_t>(v)));
      } else {
        out->append(std::to_string(v));
      }
      return;
    }
    case PhysicalType::kInt64: {
      int64_t v = column.Value<int64_t>(row);
      if (logical.kind == K::kDecimal) {
        AppendJsonString(FormatDecimal(v, logical.scale), out);
      } else if (logical.kind == K::kTimestamp) {
        AppendJsonString(FormatTimestamp(v, logical.unit, logical.utc_adjusted), out);
      } else if (logical.kind == K::kTime) {
        AppendJsonString(FormatTime(v, logical.unit), out);
      } else if (logical.kind == K::kInteger && !logical.is_signed) {
        out->append(std::to_string(static_cast<uint64_t>(v)));
      } else {
        out->append(std::to_string(v));
      }
      return;
    }
    case PhysicalType::kInt96: AppendJsonString(FormatInt96(column.data.data() + row * 12), out); return;
    case PhysicalType::kFloat: AppendJsonFloat(column.Value<float>(row), out); return;
    case PhysicalType::kDouble: AppendJsonDouble(column.Value<double>(row), out); return;
    case PhysicalType::kByteArray:
    case PhysicalType::kFixedLenByteArray: {
      std::string_view bytes =
          f.physical == PhysicalType::kByteArray
              ? column.Bytes(row)
              : std::string_view(reinterpret_cast<const char*>(column.data.data() + row * f.type_length),
                                 static_cast<size_t>(f.type_length));
      const uint8_t* b = reinterpret_cast<const uint8_t*>(bytes.data());
      switch (logical.kind) {
        case K::kString:
        case K::kEnum:
        case K::kJson: AppendJsonString(bytes, out); return;
        case K::kDecimal: AppendJsonString(FormatDecimalBigEndian(b, bytes.size(), logical.scale), out); return;
        case K::kUuid:
          if (bytes.size() == 16) {
            AppendJsonString(FormatUuid(b), out);
            return;
          }
          break;
        case K::kFloat16:
          if (bytes.size() == 2) {
            AppendJsonFloat(HalfToFloat(static_cast<uint16_t>(b[0] | (b[1] << 8))), out);
            return;
          }
          break;
        default: break;
      }
      AppendJsonString(Base64(bytes), out);
      return;
    }
  }
}

}  // namespace

void AppendJsonValue(const ColumnVector& column, int64_t row, std::string* out) {
  if (!column.IsValid(row)) {
    out->append("null");
    return;
  }
  const Field& f = *column.field;
  switch (f.kind) {
    case Field::Kind::kPrimitive: AppendPrimitive(column, row, out); return;
    case Field::Kind::kStruct:
      out->push_back('{');
      for (size_t k = 0; k < column.children.size(); ++k) {
        if (k) out->push_back(',');
        AppendJsonString(f.children[k].name, out);
        out->push_back(':');
        AppendJsonValue(column.children[k], row, out);
      }
      out->push_back('}');
      return;
    case Field::Kind::kList:
      out->push_back('[');
      for (int64_t e = column.offsets[row]; e < column.offsets[row + 1]; ++e) {
        if (e > column.offsets[row]) out->push_back(',');
        AppendJsonValue(column.children[0], e, out);
      }
      out->push_back(']');
      return;
    case Field::Kind::kMap: {
      const ColumnVector& entries = column.children[0];
      out->push_back('[');
      for (int64_t e = column.offsets[row]; e < column.offsets[row + 1]; ++e) {
        if (e > column.offsets[row]) out->push_back(',');
        out->append("{\"key\":");
        AppendJsonValue(entries.children[0], e, out);
        out->append(",\"value\":");
        if (entries.children.size() > 1) {
          AppendJsonValue(entries.children[1], e, out);
        } else {
          out->append("null");
        }
        out->push_back('}');
      }
      out->push_back(']');
      return;
    }
  }
}

void AppendJsonRow(const RecordBatch& batch, int64_t row, std::string* out) {
  out->push_back('{');
  for (size_t c = 0; c < batch.columns.size(); ++c) {
    if (c) out->push_back(',');
    AppendJsonString(batch.field(c).name, out);
    out->push_back(':');
    AppendJsonValue(batch.columns[c], row, out);
  }
  out->push_back('}');
}

}  // namespace shoal::parquet
