// The in-memory columnar result of reading: one ColumnVector per top-level field, nested the
// way the schema nests. Other subsystems (Delta, the loader) consume it without copying rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "parquet/schema.h"
#include "util/buffer.h"

namespace shoal::parquet {

/// The values of one field for `length` slots.
///  - validity: empty when no slot is null; else one byte per slot, 1 = present.
///  - primitive, fixed width: `data` holds width bytes per slot (zeros for nulls); BOOLEAN one
///    byte, 0 or 1; INT96 12 bytes; FIXED_LEN_BYTE_ARRAY type_length bytes.
///  - primitive BYTE_ARRAY: slot i is data[offsets[i], offsets[i+1]).
///  - list and map: slot i holds children[0] elements [offsets[i], offsets[i+1]); a map's one
///    child is the struct of its entries, with children key and value.
///  - struct: children[k] is field->children[k], with the same length.
struct ColumnVector {
  const Field* field = nullptr;  // owned by the batch's schema
  int64_t length = 0;
  ByteBuffer validity;
  ByteBuffer data;
  UninitVector<int64_t> offsets;
  std::vector<ColumnVector> children;

  bool IsValid(int64_t i) const { return validity.empty() || validity[i] != 0; }
  /// BYTE_ARRAY slot i.
  std::string_view Bytes(int64_t i) const {
    return {reinterpret_cast<const char*>(data.data() + offsets[i]),
            static_cast<size_t>(offsets[i + 1] - offsets[i])};
  }
  /// Fixed-width slot i, reinterpreted as T (INT32 as int32_t, DOUBLE as double, ...).
  template <typename T>
  T Value(int64_t i) const {
    T v;
    __builtin_memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
    return v;
  }
};

/// Points `column` and its children at `field` and its children (for batches built by hand,
/// whose field pointers are unset, or moved to another schema).
inline void BindField(ColumnVector& column, const Field& field) {
  column.field = &field;
  for (size_t k = 0; k < column.children.size() && k < field.children.size(); ++k) {
    BindField(column.children[k], field.children[k]);
  }
}

/// Rows of some top-level fields of a file (one row group, or a concatenation).
struct RecordBatch {
  std::shared_ptr<const Schema> schema;
  std::vector<int> field_indices;  // top-level field of each column, in output order
  std::vector<ColumnVector> columns;
  int64_t num_rows = 0;

  const Field& field(size_t column) const { return schema->fields()[field_indices[column]]; }
};

}  // namespace shoal::parquet
