#include "delta/scan.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

#include "parquet/predicate.h"
#include "parquet/reader.h"
#include "parquet/value_format.h"
#include "parquet/writer.h"
#include "util/error.h"

namespace shoal::delta {

namespace {

using parquet::ColumnVector;
using parquet::Field;
using parquet::WriteField;

bool IsTimestamp(const DeltaField& delta) {
  return delta.kind == DeltaField::Kind::kPrimitive && (delta.type == "timestamp" || delta.type == "timestamp_ntz");
}

// Renames a file's field (physical names, with column mapping) to the table's logical names,
// and presents Delta timestamps the same whatever the writer's annotation: "timestamp" as a
// UTC instant, "timestamp_ntz" without time zone.
WriteField Renamed(WriteField field, const DeltaField& delta) {
  field.name = delta.name;
  if (IsTimestamp(delta) && field.kind == WriteField::Kind::kPrimitive &&
      field.physical == parquet::PhysicalType::kInt64) {
    if (field.logical.kind != parquet::LogicalType::Kind::kTimestamp) {
      field.logical = parquet::LogicalType{};
      field.logical.kind = parquet::LogicalType::Kind::kTimestamp;
      field.logical.unit = parquet::TimeUnit::kMicros;
    }
    field.logical.utc_adjusted = delta.type == "timestamp";
  }
  if (field.kind == WriteField::Kind::kStruct && delta.kind == DeltaField::Kind::kStruct) {
    for (WriteField& child : field.children) {
      for (const DeltaField& d : delta.children) {
        if (d.PhysicalName() == child.name) child = Renamed(child, d);
      }
    }
  } else if (field.kind == WriteField::Kind::kList && delta.kind == DeltaField::Kind::kArray) {
    std::string element_name = field.children[0].name;
    field.children[0] = Renamed(field.children[0], delta.children[0]);
    field.children[0].name = element_name;
  } else if (field.kind == WriteField::Kind::kMap && delta.kind == DeltaField::Kind::kMap) {
    for (size_t k = 0; k < 2 && k < field.children.size(); ++k) {
      std::string name = field.children[k].name;
      field.children[k] = Renamed(field.children[k], delta.children[k]);
      field.children[k].name = name;
    }
  }
  return field;
}

ColumnVector NullColumn(const Field& field, int64_t length) {
  ColumnVector c;
  c.field = &field;
  c.length = length;
  if (field.nullable) c.validity.assign(static_cast<size_t>(length), 0);
  switch (field.kind) {
    case Field::Kind::kPrimitive:
      if (field.physical == parquet::PhysicalType::kByteArray) {
        c.offsets.assign(static_cast<size_t>(length) + 1, 0);
      } else {
        c.data.assign(static_cast<size_t>(length) * parquet::FixedWidthOf(field.physical, field.type_length), 0);
      }
      break;
    case Field::Kind::kStruct:
      for (const Field& child : field.children) c.children.push_back(NullColumn(child, length));
      break;
    case Field::Kind::kList:
    case Field::Kind::kMap:
      c.offsets.assign(static_cast<size_t>(length) + 1, 0);
      c.children.push_back(NullColumn(field.children[0], 0));
      break;
  }
  return c;
}

// The bytes of one partition value in the field's physical representation.
std::string PartitionBytes(const DeltaField& delta, const Field& field, const std::string& text) {
  auto fail = [&](const char* expected) -> std::string {
    throw InvalidError("partition value '" + text + "' of column '" + delta.name + "' is not " + expected);
  };
  auto fixed = [](const auto& v) { return std::string(reinterpret_cast<const char*>(&v), sizeof(v)); };
  const std::string& t = delta.type;
  try {
    if (t == "string" || t == "binary") return text;
    if (t == "boolean") {
      if (text == "true") return std::string(1, '\1');
      if (text == "false") return std::string(1, '\0');
      return fail("true or false");
    }
    size_t used = 0;
    if (t == "integer" || t == "short" || t == "byte") {
      int32_t v = static_cast<int32_t>(std::stol(text, &used));
      if (used != text.size()) return fail("an integer");
      return fixed(v);
    }
    if (t == "long") {
      int64_t v = std::stoll(text, &used);
      if (used != text.size()) return fail("an integer");
      return fixed(v);
    }
    if (t == "float") return fixed(std::stof(text));
    if (t == "double") return fixed(std::stod(text));
    if (t == "date" || t == "timestamp" || t == "timestamp_ntz") {
      parquet::Literal literal = parquet::CoerceLiteral(field, parquet::Literal::String(text));
      if (t == "date") return fixed(static_cast<int32_t>(literal.int_value));
      return fixed(literal.int_value);
    }
    if (field.logical.kind == parquet::LogicalType::Kind::kDecimal) {
      // Unscaled big-endian two's complement in 16 bytes.
      std::string digits;
      bool negative = !text.empty() && text[0] == '-';
      size_t point = text.find('.');
      int fraction = 0;
      for (size_t i = negative ? 1 : 0; i < text.size(); ++i) {
        if (i == point) continue;
        if (!std::isdigit(static_cast<unsigned char>(text[i]))) return fail("a decimal");
        digits.push_back(text[i]);
        if (point != std::string::npos && i > point) ++fraction;
      }
      if (fraction > field.logical.scale) return fail("a decimal of this scale");
      digits.append(static_cast<size_t>(field.logical.scale - fraction), '0');
      __int128 value = 0;
      for (char d : digits) value = value * 10 + (d - '0');
      if (negative) value = -value;
      std::string out(16, '\0');
      for (int i = 15; i >= 0; --i, value >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(value & 0xff);
      return out;
    }
  } catch (const std::logic_error&) {  // std::stol and friends
    return fail("a number of its type");
  }
  throw UnsupportedError("partition column '" + delta.name + "' has type '" + t + "'");
}

ColumnVector PartitionColumn(const DeltaField& delta, const Field& field, const std::optional<std::string>& value,
                             int64_t length) {
  // An absent value, or the empty string, is null (PROTOCOL.md, partition value serialization).
  if (!value || value->empty()) return NullColumn(field, length);
  std::string bytes = PartitionBytes(delta, field, *value);
  ColumnVector c;
  c.field = &field;
  c.length = length;
  if (field.physical == parquet::PhysicalType::kByteArray) {
    for (int64_t i = 0; i < length; ++i) AppendBytes(c.data, bytes.data(), bytes.size());
    c.offsets.resize(static_cast<size_t>(length) + 1);
    for (int64_t i = 0; i <= length; ++i) c.offsets[i] = i * static_cast<int64_t>(bytes.size());
  } else {
    for (int64_t i = 0; i < length; ++i) AppendBytes(c.data, bytes.data(), bytes.size());
  }
  return c;
}

// What a file's add action says about a column: its partition value, or add.stats.
std::optional<parquet::ColumnStats> FileStats(const AddFile& file, const DeltaField& delta, const Field& field,
                                              bool partition, const nlohmann::json& stats) {
  parquet::ColumnStats out;
  out.field = &field;
  if (partition) {
    auto it = file.partition_values.find(delta.name);
    if (it == file.partition_values.end() || !it->second || it->second->empty()) {
      out.null_count = 1;  // every row of the file holds null
      out.num_values = 1;
      return out;
    }
    std::string bytes = PartitionBytes(delta, field, *it->second);
    parquet::Literal value = parquet::ValueAsLiteral(field, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    out.min = out.max = value;
    out.null_count = 0;
    return out;
  }
  if (!stats.is_object()) return std::nullopt;
  auto literal = [&](const nlohmann::json& v) -> std::optional<parquet::Literal> {
    if (v.is_number_integer()) return parquet::Literal::Int(v.get<int64_t>());
    if (v.is_number()) return parquet::Literal::Double(v.get<double>());
    if (v.is_boolean()) return parquet::Literal::Bool(v.get<bool>());
    if (v.is_string()) return parquet::CoerceLiteral(field, parquet::Literal::String(v.get<std::string>()));
    return std::nullopt;
  };
  std::string physical = delta.PhysicalName();
  for (const char* key : {"minValues", "maxValues"}) {
    auto section = stats.find(key);
    if (section == stats.end() || !section->is_object() || !section->contains(physical)) continue;
    try {
      (std::string(key) == "minValues" ? out.min : out.max) = literal((*section)[physical]);
    } catch (const Error&) {
      // A statistic that does not parse only loses the skipping.
    }
  }
  // PROTOCOL.md: timestamps are truncated down to milliseconds, and strings cut at a prefix
  // (32 characters by default). A truncated maximum may lie below the true one: widen it for
  // timestamps, and drop string maxima long enough to have been cut.
  if (out.max && IsTimestamp(delta) && out.max->kind == parquet::Literal::Kind::kInt) {
    out.max->int_value += 999;  // microseconds: the rest of the millisecond
  }
  if (out.max && delta.type == "string" && out.max->kind == parquet::Literal::Kind::kString &&
      out.max->string_value.size() >= 32) {
    out.max.reset();
  }
  auto nulls = stats.find("nullCount");
  if (nulls != stats.end() && nulls->is_object() && nulls->contains(physical) && (*nulls)[physical].is_number_integer()) {
    out.null_count = (*nulls)[physical].get<int64_t>();
  }
  if (stats.contains("numRecords") && stats["numRecords"].is_number_integer()) out.num_values = stats["numRecords"].get<int64_t>();
  return out;
}

}  // namespace

const DeltaField& FindColumn(const Snapshot& snapshot, const std::string& name) {
  for (const DeltaField& f : snapshot.schema) {
    if (f.name == name) return f;
  }
  std::string available;
  for (const DeltaField& f : snapshot.schema) available += (available.empty() ? "" : ", ") + f.name;
  throw NotFoundError("no column '" + name + "' in table '" + snapshot.table_path + "' (columns: " + available + ")");
}

namespace {

bool IsPartition(const Snapshot& snapshot, const DeltaField& f) {
  for (const std::string& p : snapshot.metadata.partition_columns) {
    if (p == f.name) return true;
  }
  return false;
}

}  // namespace

bool FileMayMatch(const Snapshot& snapshot, const AddFile& file, const parquet::Predicate& predicate) {
  // Table-typed fields, for reading statistics and partition values.
  std::vector<WriteField> table_fields;
  for (const DeltaField& f : snapshot.schema) table_fields.push_back(ToWriteField(f));
  parquet::Schema table_schema = parquet::Schema::FromElements(parquet::ToSchemaElements(table_fields));
  nlohmann::json stats = file.stats ? nlohmann::json::parse(*file.stats, nullptr, false) : nlohmann::json();
  return predicate.MayMatch([&](const std::string& name) -> std::optional<parquet::ColumnStats> {
    for (size_t i = 0; i < snapshot.schema.size(); ++i) {
      const DeltaField& delta = snapshot.schema[i];
      if (delta.name != name || delta.kind != DeltaField::Kind::kPrimitive) continue;
      return FileStats(file, delta, table_schema.fields()[i], IsPartition(snapshot, delta), stats);
    }
    return std::nullopt;
  });
}

DataFileReader::DataFileReader(const Snapshot& snapshot, const AddFile& file) : snapshot_(snapshot), file_(file) {
  std::string path = DataFilePath(snapshot, file);
  where_ = "data file '" + path + "' of table version " + std::to_string(snapshot.version);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw NotFoundError(where_ + " does not exist");
  try {
    // Rows deleted by the file's deletion vector, sorted.
    if (file.deletion_vector) deleted_ = LoadDeletionVector(snapshot.table_path, *file.deletion_vector);
    reader_ = parquet::FileReader::Open(path);
  } catch (const Error& e) {
    throw WithContext(e, where_);
  }
  uint64_t first = 0;
  for (const parquet::RowGroup& group : reader_->metadata().row_groups) {
    row_group_first_.push_back(first);
    first += static_cast<uint64_t>(group.num_rows);
  }
}

DataFileReader::~DataFileReader() = default;

int DataFileReader::num_row_groups() const { return reader_->num_row_groups(); }

int64_t DataFileReader::num_rows(int row_group) const { return reader_->metadata().row_groups.at(row_group).num_rows; }

parquet::RecordBatch DataFileReader::ReadRowGroup(int g, const std::vector<const DeltaField*>& read) const {
  // Output schema: each read column from the file, a partition value, or nulls.
  std::vector<WriteField> fields;
  std::vector<int> file_fields;  // file field index per output column, -1 for none
  for (const DeltaField* f : read) {
    int index = IsPartition(snapshot_, *f) ? -1 : reader_->schema().FieldIndex(f->PhysicalName());
    file_fields.push_back(index);
    // INT96 timestamps (Spark) become INT64 microseconds, like every other Delta timestamp.
    bool int96 = index >= 0 && IsTimestamp(*f) &&
                 reader_->schema().fields()[index].physical == parquet::PhysicalType::kInt96;
    fields.push_back(index >= 0 && !int96 ? Renamed(parquet::WriteFieldOf(reader_->schema().fields()[index]), *f)
                                          : ToWriteField(*f));
  }
  auto schema = std::make_shared<const parquet::Schema>(parquet::Schema::FromElements(parquet::ToSchemaElements(fields)));
  std::vector<int> projection;
  for (int index : file_fields) {
    if (index >= 0) projection.push_back(index);
  }
  parquet::RecordBatch input;
  try {
    input = projection.empty() ? parquet::RecordBatch{} : reader_->ReadRowGroup(g, projection);
  } catch (const Error& e) {
    throw WithContext(e, where_);
  }
  int64_t rows = num_rows(g);
  parquet::RecordBatch batch;
  batch.schema = schema;
  batch.num_rows = rows;
  size_t next_input = 0;
  for (size_t c = 0; c < read.size(); ++c) {
    const Field& field = schema->fields()[c];
    batch.field_indices.push_back(static_cast<int>(c));
    if (file_fields[c] >= 0) {
      ColumnVector column = std::move(input.columns[next_input++]);
      if (column.field->physical == parquet::PhysicalType::kInt96 && field.physical == parquet::PhysicalType::kInt64) {
        ByteBuffer micros(static_cast<size_t>(column.length) * 8);
        for (int64_t i = 0; i < column.length; ++i) {
          int64_t v = column.IsValid(i) ? parquet::Int96ToMicros(column.data.data() + 12 * i) : 0;
          std::memcpy(micros.data() + 8 * i, &v, 8);
        }
        column.data = std::move(micros);
      }
      parquet::BindField(column, field);
      batch.columns.push_back(std::move(column));
    } else if (IsPartition(snapshot_, *read[c])) {
      auto it = file_.partition_values.find(read[c]->name);
      std::optional<std::string> value = it == file_.partition_values.end() ? std::nullopt : it->second;
      batch.columns.push_back(PartitionColumn(*read[c], field, value, rows));
    } else {
      batch.columns.push_back(NullColumn(field, rows));
    }
  }
  return batch;
}

void DataFileReader::ApplyDeletionVector(int g, std::vector<uint8_t>* mask) const {
  uint64_t first = row_group_first_.at(g);
  uint64_t end = first + static_cast<uint64_t>(num_rows(g));
  auto it = std::lower_bound(deleted_.begin(), deleted_.end(), first);
  if (it == deleted_.end() || *it >= end) return;
  if (mask->empty()) mask->assign(static_cast<size_t>(end - first), 1);
  for (; it != deleted_.end() && *it < end; ++it) (*mask)[*it - first] = 0;
}

void ScanSnapshot(const Snapshot& snapshot, const ScanOptions& options,
                  const std::function<void(const parquet::RecordBatch&)>& on_batch) {
  // The columns to produce, in order.
  std::vector<const DeltaField*> wanted;
  if (options.columns.empty()) {
    for (const DeltaField& f : snapshot.schema) wanted.push_back(&f);
  } else {
    for (const std::string& name : options.columns) wanted.push_back(&FindColumn(snapshot, name));
  }
  // A predicate may read columns that are not printed: read those too, then drop them.
  std::vector<const DeltaField*> read = wanted;
  if (options.predicate) {
    for (const std::string& name : options.predicate->Columns()) {
      bool have = false;
      for (const DeltaField* f : read) have |= f->name == name;
      if (have) continue;
      try {
        read.push_back(&FindColumn(snapshot, name));
      } catch (const Error&) {
        throw NotFoundError("the predicate reads column '" + name + "', which table '" + snapshot.table_path +
                            "' does not have");
      }
    }
  }
  for (const AddFile& file : snapshot.files) {
    if (options.predicate && !FileMayMatch(snapshot, file, *options.predicate)) continue;
    DataFileReader reader(snapshot, file);
    for (int g = 0; g < reader.num_row_groups(); ++g) {
      parquet::RecordBatch batch = reader.ReadRowGroup(g, read);
      std::vector<uint8_t> mask;
      if (options.predicate) mask = options.predicate->Evaluate(batch);
      reader.ApplyDeletionVector(g, &mask);
      if (!mask.empty()) batch = parquet::FilterBatch(batch, mask);
      // Drop the columns read only for the predicate.
      batch.columns.resize(wanted.size());
      batch.field_indices.resize(wanted.size());
      on_batch(batch);
    }
  }
}

}  // namespace shoal::delta
