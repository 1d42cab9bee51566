// A Delta table's schema (metaData.schemaString), and how its types map onto Parquet fields.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "parquet/writer.h"

namespace shoal::delta {

/// One field of a Delta schema. `type` is a primitive name ("long", "decimal(10,2)", ...) or,
/// for nested types, empty with `kind` saying which.
struct DeltaField {
  enum class Kind { kPrimitive, kStruct, kArray, kMap };
  std::string name;
  Kind kind = Kind::kPrimitive;
  std::string type;
  bool nullable = true;
  nlohmann::json metadata = nlohmann::json::object();
  std::vector<DeltaField> children;  // struct fields; array: element; map: key, value

  /// The column-mapping physical name, or the name when the table maps none.
  std::string PhysicalName() const;
};

/// Parses schemaString. Throws InvalidError naming what is malformed.
std::vector<DeltaField> ParseSchema(const std::string& schema_string);

/// The Parquet field that holds values of `field`, for columns shoal materialises itself
/// (partition columns, columns a data file lacks). Throws UnsupportedError for unknown types.
parquet::WriteField ToWriteField(const DeltaField& field);

}  // namespace shoal::delta
