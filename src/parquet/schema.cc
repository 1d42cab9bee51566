#include "parquet/schema.h"

#include "util/error.h"

namespace shoal::parquet {

namespace {

constexpr int kMaxDepth = 100;

struct RawNode {
  const SchemaElement* element = nullptr;
  std::vector<RawNode> children;
};

RawNode BuildRaw(const std::vector<SchemaElement>& elements, size_t* next, int depth) {
  if (depth > kMaxDepth) throw InvalidError("schema is nested deeper than 100 levels");
  if (*next >= elements.size()) {
    throw InvalidError("schema declares more children than its " +
                       std::to_string(elements.size()) + " elements hold");
  }
  RawNode node;
  node.element = &elements[(*next)++];
  const SchemaElement& e = *node.element;
  if (!e.type) {
    if (e.num_children < 0 || static_cast<size_t>(e.num_children) > elements.size() - *next) {
      throw InvalidError("schema group '" + e.name + "' declares " +
                         std::to_string(e.num_children) + " children, but only " +
                         std::to_string(elements.size() - *next) + " elements follow");
    }
    for (int i = 0; i < e.num_children; ++i) node.children.push_back(BuildRaw(elements, next, depth + 1));
    if (node.children.empty() && depth > 0) {
      throw InvalidError("schema group '" + e.name + "' has no children and no type");
    }
  }
  return node;
}

bool IsAnnotated(const SchemaElement& e, LogicalType::Kind kind, ConvertedType converted) {
  if (e.logical_type && e.logical_type->kind == kind) return true;
  return e.converted_type == converted;
}

class Converter {
 public:
  explicit Converter(std::vector<ColumnDescriptor>* columns) : columns_(columns) {}

  // Converts `node` whose parent is present at definition level `parent_def` and sits at
  // repetition depth `parent_rep`. With as_required, the node's own repetition is ignored: it is
  // the element of a list whose repeated level was already counted.
  Field Convert(const RawNode& node, int16_t parent_def, int16_t parent_rep,
                std::vector<std::string>& path, bool as_required = false) {
    const SchemaElement& e = *node.element;
    Repetition repetition = as_required ? Repetition::kRequired
                                        : e.repetition.value_or(Repetition::kRequired);
    path.push_back(e.name);
    Field field;
    if (repetition == Repetition::kRepeated) {
      // A repeated field without LIST/MAP annotation: a required list of required elements.
      field.name = e.name;
      field.kind = Field::Kind::kList;
      field.nullable = false;
      field.definition_level = parent_def;
      field.element_definition_level = static_cast<int16_t>(parent_def + 1);
      field.repetition_level = static_cast<int16_t>(parent_rep + 1);
      path.pop_back();
      field.first_column = static_cast<int>(columns_->size());
      field.children.push_back(Convert(node, field.element_definition_level,
                                       field.repetition_level, path, /*as_required=*/true));
      field.num_columns = static_cast<int>(columns_->size()) - field.first_column;
      return field;
    }
    int16_t def = static_cast<int16_t>(parent_def + (repetition == Repetition::kOptional ? 1 : 0));
    field.name = e.name;
    field.nullable = repetition == Repetition::kOptional;
    field.definition_level = def;
    field.first_column = static_cast<int>(columns_->size());
    if (e.type) {
      ConvertPrimitive(e, def, parent_rep, path, &field);
    } else if (IsAnnotated(e, LogicalType::Kind::kList, ConvertedType::kList) &&
               node.children.size() == 1 &&
               node.children[0].element->repetition == Repetition::kRepeated) {
      ConvertList(node, def, parent_rep, path, &field);
    } else if ((IsAnnotated(e, LogicalType::Kind::kMap, ConvertedType::kMap) ||
                e.converted_type == ConvertedType::kMapKeyValue) &&
               node.children.size() == 1 &&
               node.children[0].element->repetition == Repetition::kRepeated &&
               !node.children[0].children.empty() && node.children[0].children.size() <= 2) {
      ConvertMap(node, def, parent_rep, path, &field);
    } else {
      field.kind = Field::Kind::kStruct;
      for (const RawNode& child : node.children) {
        field.children.push_back(Convert(child, def, parent_rep, path));
      }
    }
    field.num_columns = static_cast<int>(columns_->size()) - field.first_column;
    path.pop_back();
    return field;
  }

 private:
  void ConvertPrimitive(const SchemaElement& e, int16_t def, int16_t rep,
                        const std::vector<std::string>& path, Field* field) {
    if (*e.type == PhysicalType::kFixedLenByteArray && e.type_length <= 0) {
      throw InvalidError("column '" + e.name + "' is FIXED_LEN_BYTE_ARRAY with type_length " +
                         std::to_string(e.type_length) + ", expected a positive length");
    }
    field->kind = Field::Kind::kPrimitive;
    field->physical = *e.type;
    field->type_length = e.type_length;
    field->logical = EffectiveLogicalType(e);
    field->column_index = static_cast<int>(columns_->size());
    ColumnDescriptor column;
    column.index = field->column_index;
    column.path = path;
    column.physical = *e.type;
    column.type_length = e.type_length;
    column.logical = field->logical;
    column.max_definition_level = def;
    column.max_repetition_level = rep;
    column.required = !field->nullable;
    columns_->push_back(std::move(column));
  }

  void ConvertList(const RawNode& node, int16_t def, int16_t parent_rep,
                   std::vector<std::string>& path, Field* field) {
    const RawNode& repeated = node.children[0];
    const SchemaElement& r = *repeated.element;
    field->kind = Field::Kind::kList;
    field->element_definition_level = static_cast<int16_t>(def + 1);
    field->repetition_level = static_cast<int16_t>(parent_rep + 1);
    // LogicalTypes.md: the repeated field is itself the element when it is a primitive, a group
    // of several fields, or a group named "array" or "<list>_tuple" (legacy two-level lists).
    bool two_level = r.type.has_value() || repeated.children.size() > 1 || r.name == "array" ||
                     r.name == node.element->name + "_tuple";
    if (two_level) {
      field->children.push_back(Convert(repeated, field->element_definition_level,
                                        field->repetition_level, path, /*as_required=*/true));
    } else {
      path.push_back(r.name);
      field->children.push_back(Convert(repeated.children[0], field->element_definition_level,
                                        field->repetition_level, path));
      path.pop_back();
    }
  }

  void ConvertMap(const RawNode& node, int16_t def, int16_t parent_rep,
                  std::vector<std::string>& path, Field* field) {
    const RawNode& key_value = node.children[0];
    field->kind = Field::Kind::kMap;
    field->element_definition_level = static_cast<int16_t>(def + 1);
    field->repetition_level = static_cast<int16_t>(parent_rep + 1);
    Field entries;
    entries.name = key_value.element->name;
    entries.kind = Field::Kind::kStruct;
    entries.definition_level = field->element_definition_level;
    entries.first_column = static_cast<int>(columns_->size());
    path.push_back(key_value.element->name);
    for (const RawNode& child : key_value.children) {
      entries.children.push_back(
          Convert(child, field->element_definition_level, field->repetition_level, path));
    }
    path.pop_back();
    entries.num_columns = static_cast<int>(columns_->size()) - entries.first_column;
    field->children.push_back(std::move(entries));
  }

  std::vector<ColumnDescriptor>* columns_;
};

void AppendElement(const std::vector<SchemaElement>& elements, size_t* next, int indent,
                   std::string* out) {
  const SchemaElement& e = elements[(*next)++];
  out->append(indent, ' ');
  out->append(RepetitionName(e.repetition.value_or(Repetition::kRequired)));
  out->push_back(' ');
  if (e.type) {
    out->append(e.type == PhysicalType::kFixedLenByteArray
                    ? "fixed_len_byte_array(" + std::to_string(e.type_length) + ")"
                    : [&] {
                        std::string t(PhysicalTypeName(*e.type));
                        for (char& c : t) c = static_cast<char>(std::tolower(c));
                        return t;
                      }());
  } else {
    out->append("group");
  }
  out->push_back(' ');
  out->append(e.name);
  std::string logical = LogicalTypeName(EffectiveLogicalType(e));
  if (!logical.empty()) out->append(" (" + logical + ")");
  if (e.field_id) out->append(" = " + std::to_string(*e.field_id));
  if (e.type) {
    out->append(";\n");
    return;
  }
  out->append(" {\n");
  for (int i = 0; i < e.num_children && *next < elements.size(); ++i) {
    AppendElement(elements, next, indent + 2, out);
  }
  out->append(indent, ' ');
  out->append("}\n");
}

}  // namespace

std::string ColumnDescriptor::PathString() const {
  std::string s;
  for (const std::string& p : path) {
    if (!s.empty()) s.push_back('.');
    s += p;
  }
  return s;
}

LogicalType EffectiveLogicalType(const SchemaElement& e) {
  using K = LogicalType::Kind;
  if (e.logical_type && e.logical_type->kind != K::kNone) {
    LogicalType t = *e.logical_type;
    if (t.kind == K::kDecimal && t.precision == 0) {
      t.precision = e.precision;
      t.scale = e.scale;
    }
    return t;
  }
  LogicalType t;
  auto integer = [&](int bits, bool is_signed) {
    t.kind = K::kInteger;
    t.bit_width = bits;
    t.is_signed = is_signed;
  };
  auto temporal = [&](K kind, TimeUnit unit) {
    t.kind = kind;
    t.unit = unit;
    // LogicalTypes.md calls these UTC-normalised, but readers (Arrow, DuckDB, Spark) present
    // a legacy TIMESTAMP_* converted type as a timestamp without time zone; so do we.
    t.utc_adjusted = false;
  };
  switch (e.converted_type) {
    case ConvertedType::kUtf8: t.kind = K::kString; break;
    case ConvertedType::kMap:
    case ConvertedType::kMapKeyValue: t.kind = K::kMap; break;
    case ConvertedType::kList: t.kind = K::kList; break;
    case ConvertedType::kEnum: t.kind = K::kEnum; break;
    case ConvertedType::kDecimal:
      t.kind = K::kDecimal;
      t.scale = e.scale;
      t.precision = e.precision;
      break;
    case ConvertedType::kDate: t.kind = K::kDate; break;
    case ConvertedType::kTimeMillis: temporal(K::kTime, TimeUnit::kMillis); break;
    case ConvertedType::kTimeMicros: temporal(K::kTime, TimeUnit::kMicros); break;
    case ConvertedType::kTimestampMillis: temporal(K::kTimestamp, TimeUnit::kMillis); break;
    case ConvertedType::kTimestampMicros: temporal(K::kTimestamp, TimeUnit::kMicros); break;
    case ConvertedType::kUint8: integer(8, false); break;
    case ConvertedType::kUint16: integer(16, false); break;
    case ConvertedType::kUint32: integer(32, false); break;
    case ConvertedType::kUint64: integer(64, false); break;
    case ConvertedType::kInt8: integer(8, true); break;
    case ConvertedType::kInt16: integer(16, true); break;
    case ConvertedType::kInt32: integer(32, true); break;
    case ConvertedType::kInt64: integer(64, true); break;
    case ConvertedType::kJson: t.kind = K::kJson; break;
    case ConvertedType::kBson: t.kind = K::kBson; break;
    case ConvertedType::kInterval: t.kind = K::kInterval; break;
    default: break;
  }
  return t;
}

Schema Schema::FromElements(const std::vector<SchemaElement>& elements) {
  if (elements.empty()) throw InvalidError("schema has no elements");
  size_t next = 0;
  RawNode root = BuildRaw(elements, &next, 0);
  if (next != elements.size()) {
    throw InvalidError("schema has " + std::to_string(elements.size()) +
                       " elements, but its tree uses only " + std::to_string(next));
  }
  if (root.element->type) throw InvalidError("schema root '" + root.element->name + "' is not a group");
  Schema schema;
  schema.root_name_ = root.element->name;
  schema.elements_ = elements;
  Converter converter(&schema.columns_);
  std::vector<std::string> path;
  for (const RawNode& child : root.children) {
    schema.fields_.push_back(converter.Convert(child, 0, 0, path));
  }
  return schema;
}

int Schema::FieldIndex(const std::string& name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Schema::ToString() const {
  std::string out = "message " + root_name_ + " {\n";
  size_t next = 1;
  while (next < elements_.size()) AppendElement(elements_, &next, 2, &out);
  out += "}\n";
  return out;
}

}  // namespace shoal::parquet
