// A small predicate API over top-level primitive columns: comparisons with a literal, IS [NOT]
// NULL, and/or. It prunes row groups (and, in Delta, files) from min/max/null-count statistics
// and filters rows of a batch.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parquet/batch.h"
#include "parquet/metadata.h"

namespace shoal::parquet {

/// A scalar value. Columns map to literals by their type: integers (and DATE, TIME, TIMESTAMP in
/// their stored unit, INT96 in microseconds) as kInt, FLOAT/DOUBLE/DECIMAL/FLOAT16 as kDouble, text and other
/// bytes as kString, BOOLEAN as kBool.
struct Literal {
  enum class Kind { kNull, kBool, kInt, kDouble, kString };
  Kind kind = Kind::kNull;
  bool bool_value = false;
  int64_t int_value = 0;
  double double_value = 0;
  std::string string_value;

  static Literal Int(int64_t v);
  static Literal Double(double v);
  static Literal String(std::string v);
  static Literal Bool(bool v);
  std::string ToString() const;
};

/// What statistics say about one column of a row group or file.
struct ColumnStats {
  const Field* field = nullptr;
  std::optional<Literal> min;
  std::optional<Literal> max;
  std::optional<int64_t> null_count;
  int64_t num_values = -1;  // -1 when unknown
};

using StatsLookup = std::function<std::optional<ColumnStats>(const std::string& column)>;

class Predicate {
 public:
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kIsNull, kIsNotNull, kAnd, kOr };

  static Predicate Compare(std::string column, Op op, Literal value);
  static Predicate IsNull(std::string column);
  static Predicate IsNotNull(std::string column);
  static Predicate And(std::vector<Predicate> children);
  static Predicate Or(std::vector<Predicate> children);

  /// Parses "col op literal" terms (op: = == != <> < <= > >=, or IS [NOT] NULL) joined by
  /// AND / OR (AND binds tighter) with optional parentheses. Literals: numbers, true/false,
  /// null, and strings in single or double quotes. Throws InvalidError naming the position.
  static Predicate Parse(std::string_view text);

  Op op() const { return op_; }
  const std::string& column() const { return column_; }
  const Literal& literal() const { return literal_; }
  const std::vector<Predicate>& children() const { return children_; }
  /// The columns the predicate reads.
  std::vector<std::string> Columns() const;
  std::string ToString() const;

  /// False only when the statistics prove that no row matches. Columns without statistics
  /// may match.
  bool MayMatch(const StatsLookup& lookup) const;

  /// One byte per row of `batch`: 1 where the row matches (SQL semantics: a comparison with
  /// null is false). Throws NotFoundError when a column is missing from the batch, and
  /// InvalidError when it is not a primitive or the literal does not fit its type.
  std::vector<uint8_t> Evaluate(const RecordBatch& batch) const;

 private:
  Op op_ = Op::kAnd;
  std::string column_;
  Literal literal_;
  std::vector<Predicate> children_;
};

/// The rows of `batch` where `mask` (one byte per row) is 1, nested values included.
RecordBatch FilterBatch(const RecordBatch& batch, const std::vector<uint8_t>& mask);

/// The literal of one PLAIN-encoded value (without a length prefix) of a primitive field.
Literal ValueAsLiteral(const Field& field, const uint8_t* bytes, size_t size);
/// The literal of slot `row` of a primitive column.
Literal SlotAsLiteral(const ColumnVector& column, int64_t row);
/// `value` in the representation of `field`: ISO text becomes days or time units for
/// DATE/TIME/TIMESTAMP columns. Throws InvalidError when it cannot.
Literal CoerceLiteral(const Field& field, const Literal& value);
/// Three-way comparison, or nothing when the kinds are not comparable.
std::optional<int> CompareLiterals(const Literal& a, const Literal& b);

/// Statistics of top-level primitive column `name` in a row group, when the file has them.
std::optional<ColumnStats> RowGroupStatistics(const Schema& schema, const RowGroup& group,
                                              const std::string& name);

}  // namespace shoal::parquet
