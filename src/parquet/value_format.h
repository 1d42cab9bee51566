// Rendering values as text: the JSON-lines mapping of `shoal cat` (docs/cli.md) and the
// temporal, decimal and UUID forms it uses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "parquet/batch.h"

namespace shoal::parquet {

/// "YYYY-MM-DD" for a count of days since 1970-01-01 (proleptic Gregorian calendar).
std::string FormatDate(int64_t days);
/// "HH:MM:SS[.fff...]" for a time of day in `unit`s; the fraction appears when non-zero, with
/// 6 digits (9 for nanoseconds that are not whole microseconds).
std::string FormatTime(int64_t value, TimeUnit unit);
/// "YYYY-MM-DDTHH:MM:SS[.ffffff]" for an instant in `unit`s since the epoch, with "Z" when
/// `utc` is set. The fraction follows FormatTime's rule.
std::string FormatTimestamp(int64_t value, TimeUnit unit, bool utc);
/// INT96 (Spark/Impala) holds nanoseconds of the day, then the Julian day, little-endian.
/// Microseconds since the epoch of an INT96 value, as Spark reads it (wrapping 64-bit).
int64_t Int96ToMicros(const uint8_t* bytes);
/// "YYYY-MM-DDTHH:MM:SS[.fraction]" of an INT96 value, exact for any date.
std::string FormatInt96(const uint8_t* bytes);
/// The decimal string, with exactly `scale` fraction digits, of a big-endian two's-complement
/// unscaled integer of any length.
std::string FormatDecimalBigEndian(const uint8_t* bytes, size_t length, int32_t scale);
std::string FormatDecimal(int64_t unscaled, int32_t scale);
std::string FormatUuid(const uint8_t* bytes);
std::string Base64(std::string_view bytes);
/// Shortest text that reads back as the same double / float; NaN and infinities as the JSON
/// strings "NaN", "Infinity", "-Infinity".
void AppendJsonDouble(double value, std::string* out);
void AppendJsonFloat(float value, std::string* out);
/// A JSON string literal, escaping as RFC 8259 requires; invalid UTF-8 becomes U+FFFD.
void AppendJsonString(std::string_view text, std::string* out);
/// IEEE half precision to float.
float HalfToFloat(uint16_t half);

/// Appends the JSON form of slot `row` of `column` to `out`, following the mapping.
void AppendJsonValue(const ColumnVector& column, int64_t row, std::string* out);
/// One JSON object for row `row` of the batch, keys in column order, without a newline.
void AppendJsonRow(const RecordBatch& batch, int64_t row, std::string* out);

}  // namespace shoal::parquet
