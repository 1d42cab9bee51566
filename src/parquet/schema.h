// The schema of a Parquet file as a tree of fields, with the definition and repetition levels
// needed to assemble nested values. LIST and MAP follow LogicalTypes.md, including the legacy
// two-level lists, repeated fields without annotation, and MAP_KEY_VALUE.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parquet/metadata.h"
#include "parquet/types.h"

namespace shoal::parquet {

/// One leaf column: a primitive field and its column chunk index in every row group.
struct ColumnDescriptor {
  int index = 0;
  std::vector<std::string> path;  // names from the top-level field down to the leaf
  PhysicalType physical = PhysicalType::kInt32;
  int32_t type_length = 0;
  LogicalType logical;
  int16_t max_definition_level = 0;
  int16_t max_repetition_level = 0;
  bool required = true;  // the leaf itself (not its ancestors) is required

  std::string PathString() const;  // "a.b.c"
};

/// A node of the logical schema tree. Lists and maps are explicit; a MAP's single child is the
/// entries struct with children "key" and "value".
struct Field {
  enum class Kind { kPrimitive, kStruct, kList, kMap };
  std::string name;
  Kind kind = Kind::kPrimitive;
  bool nullable = false;
  /// Definition level at which this field is present (not null).
  int16_t definition_level = 0;
  /// Lists and maps: definition level at which the list holds at least one element, and the
  /// repetition level that separates its elements.
  int16_t element_definition_level = 0;
  int16_t repetition_level = 0;
  std::vector<Field> children;
  /// Primitive fields: the leaf column.
  int column_index = -1;
  PhysicalType physical = PhysicalType::kInt32;
  int32_t type_length = 0;
  LogicalType logical;
  /// The leaf columns under this field are [first_column, first_column + num_columns).
  int first_column = 0;
  int num_columns = 0;
};

class Schema {
 public:
  Schema() = default;
  /// Builds the tree from the flat schema of a FileMetaData. Throws InvalidError when the
  /// element list is inconsistent (bad child counts, a leaf without a type, ...).
  static Schema FromElements(const std::vector<SchemaElement>& elements);

  const std::vector<Field>& fields() const { return fields_; }
  const std::vector<ColumnDescriptor>& columns() const { return columns_; }
  /// Index of the top-level field named `name`, or -1.
  int FieldIndex(const std::string& name) const;
  /// The schema as indented text, one field per line, in Parquet's message syntax.
  std::string ToString() const;

 private:
  std::string root_name_;
  std::vector<SchemaElement> elements_;
  std::vector<Field> fields_;
  std::vector<ColumnDescriptor> columns_;
};

/// The logical type of a schema element: its LogicalType, else derived from its ConvertedType.
LogicalType EffectiveLogicalType(const SchemaElement& element);

}  // namespace shoal::parquet
