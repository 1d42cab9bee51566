#include "delta/schema.h"

#include <cstdio>

#include "util/error.h"

namespace shoal::delta {

namespace {

DeltaField ParseType(const std::string& name, const nlohmann::json& type, bool nullable, const nlohmann::json& metadata,
                     int depth) {
  if (depth > 64) throw InvalidError("Delta schema nested deeper than 64 levels");
  DeltaField f;
  f.name = name;
  f.nullable = nullable;
  if (metadata.is_object()) f.metadata = metadata;
  if (type.is_string()) {
    f.type = type.get<std::string>();
    return f;
  }
  if (!type.is_object() || !type.contains("type") || !type["type"].is_string()) {
    throw InvalidError("Delta schema field '" + name + "' has a malformed type: " + type.dump());
  }
  std::string kind = type["type"].get<std::string>();
  if (kind == "struct") {
    f.kind = DeltaField::Kind::kStruct;
    if (!type.contains("fields") || !type["fields"].is_array()) {
      throw InvalidError("Delta struct type of '" + name + "' has no fields array");
    }
    for (const nlohmann::json& child : type["fields"]) {
      if (!child.is_object() || !child.contains("name") || !child["name"].is_string() || !child.contains("type")) {
        throw InvalidError("Delta schema field under '" + name + "' lacks a name or type: " + child.dump());
      }
      f.children.push_back(ParseType(child["name"].get<std::string>(), child["type"], child.value("nullable", true),
                                     child.value("metadata", nlohmann::json::object()), depth + 1));
    }
  } else if (kind == "array") {
    f.kind = DeltaField::Kind::kArray;
    if (!type.contains("elementType")) throw InvalidError("Delta array type of '" + name + "' has no elementType");
    f.children.push_back(ParseType("element", type["elementType"], type.value("containsNull", true),
                                   nlohmann::json::object(), depth + 1));
  } else if (kind == "map") {
    f.kind = DeltaField::Kind::kMap;
    if (!type.contains("keyType") || !type.contains("valueType")) {
      throw InvalidError("Delta map type of '" + name + "' lacks keyType or valueType");
    }
    f.children.push_back(ParseType("key", type["keyType"], false, nlohmann::json::object(), depth + 1));
    f.children.push_back(ParseType("value", type["valueType"], type.value("valueContainsNull", true),
                                   nlohmann::json::object(), depth + 1));
  } else {
    throw UnsupportedError("Delta schema field '" + name + "' has type '" + kind + "'");
  }
  return f;
}

}  // namespace

std::string DeltaField::PhysicalName() const {
  auto it = metadata.find("delta.columnMapping.physicalName");
  if (it != metadata.end() && it->is_string()) return it->get<std::string>();
  return name;
}

std::vector<DeltaField> ParseSchema(const std::string& schema_string) {
  nlohmann::json root = nlohmann::json::parse(schema_string, nullptr, false);
  if (root.is_discarded()) throw InvalidError("metaData.schemaString is not valid JSON");
  DeltaField top = ParseType("root", root, false, nlohmann::json::object(), 0);
  if (top.kind != DeltaField::Kind::kStruct) throw InvalidError("metaData.schemaString is not a struct type");
  return top.children;
}

parquet::WriteField ToWriteField(const DeltaField& f) {
  using parquet::LogicalType;
  using parquet::PhysicalType;
  using parquet::WriteField;
  switch (f.kind) {
    case DeltaField::Kind::kStruct: {
      std::vector<WriteField> children;
      for (const DeltaField& c : f.children) children.push_back(ToWriteField(c));
      return WriteField::Struct(f.name, std::move(children), f.nullable);
    }
    case DeltaField::Kind::kArray: return WriteField::List(f.name, ToWriteField(f.children[0]), f.nullable);
    case DeltaField::Kind::kMap:
      return WriteField::Map(f.name, ToWriteField(f.children[0]), ToWriteField(f.children[1]), f.nullable);
    case DeltaField::Kind::kPrimitive: break;
  }
  auto integer = [&](int bits) {
    LogicalType t;
    t.kind = LogicalType::Kind::kInteger;
    t.bit_width = bits;
    t.is_signed = true;
    return t;
  };
  const std::string& t = f.type;
  if (t == "string") return WriteField::String(f.name, f.nullable);
  if (t == "long") return WriteField::Primitive(f.name, PhysicalType::kInt64, f.nullable);
  if (t == "integer") return WriteField::Primitive(f.name, PhysicalType::kInt32, f.nullable);
  if (t == "short") return WriteField::Primitive(f.name, PhysicalType::kInt32, f.nullable, integer(16));
  if (t == "byte") return WriteField::Primitive(f.name, PhysicalType::kInt32, f.nullable, integer(8));
  if (t == "float") return WriteField::Primitive(f.name, PhysicalType::kFloat, f.nullable);
  if (t == "double") return WriteField::Primitive(f.name, PhysicalType::kDouble, f.nullable);
  if (t == "boolean") return WriteField::Primitive(f.name, PhysicalType::kBoolean, f.nullable);
  if (t == "binary") return WriteField::Primitive(f.name, PhysicalType::kByteArray, f.nullable);
  if (t == "date") {
    LogicalType d;
    d.kind = LogicalType::Kind::kDate;
    return WriteField::Primitive(f.name, PhysicalType::kInt32, f.nullable, d);
  }
  if (t == "timestamp" || t == "timestamp_ntz") {
    LogicalType ts;
    ts.kind = LogicalType::Kind::kTimestamp;
    ts.unit = parquet::TimeUnit::kMicros;
    ts.utc_adjusted = t == "timestamp";
    return WriteField::Primitive(f.name, PhysicalType::kInt64, f.nullable, ts);
  }
  int precision = 0, scale = 0;
  if (std::sscanf(t.c_str(), "decimal(%d,%d)", &precision, &scale) == 2 ||
      std::sscanf(t.c_str(), "decimal(%d, %d)", &precision, &scale) == 2) {
    if (precision < 1 || precision > 38 || scale < 0 || scale > precision) {
      throw InvalidError("Delta field '" + f.name + "' has type " + t + ", outside decimal(1..38, 0..precision)");
    }
    LogicalType d;
    d.kind = LogicalType::Kind::kDecimal;
    d.precision = precision;
    d.scale = scale;
    return WriteField::Primitive(f.name, PhysicalType::kFixedLenByteArray, f.nullable, d, 16);
  }
  throw UnsupportedError("Delta field '" + f.name + "' has type '" + t + "', which shoal does not read");
}

}  // namespace shoal::delta
