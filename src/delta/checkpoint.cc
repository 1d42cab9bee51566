#include "delta/checkpoint.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "delta/snapshot.h"
#include "parquet/writer.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::delta {

namespace {

using nlohmann::json;
using parquet::ColumnVector;
using parquet::Field;
using parquet::PhysicalType;
using parquet::WriteField;

WriteField Str(const std::string& name) { return WriteField::String(name); }
WriteField I32(const std::string& name) { return WriteField::Primitive(name, PhysicalType::kInt32); }
WriteField I64(const std::string& name) { return WriteField::Primitive(name, PhysicalType::kInt64); }
WriteField Bool(const std::string& name) { return WriteField::Primitive(name, PhysicalType::kBoolean); }
WriteField StrMap(const std::string& name) { return WriteField::Map(name, Str("key"), Str("value")); }
WriteField StrList(const std::string& name) { return WriteField::List(name, Str("element")); }

WriteField DeletionVector() {
  return WriteField::Struct("deletionVector", {Str("storageType"), Str("pathOrInlineDv"), I32("offset"),
                                               I32("sizeInBytes"), I64("cardinality")});
}

// The checkpoint schema of PROTOCOL.md ("Checkpoint Schema").
std::vector<WriteField> CheckpointFields() {
  return {
      WriteField::Struct("txn", {Str("appId"), I64("version"), I64("lastUpdated")}),
      WriteField::Struct("add", {Str("path"), StrMap("partitionValues"), I64("size"), I64("modificationTime"),
                                 Bool("dataChange"), StrMap("tags"), DeletionVector(), Str("stats")}),
      WriteField::Struct("remove", {Str("path"), I64("deletionTimestamp"), Bool("dataChange"),
                                    Bool("extendedFileMetadata"), StrMap("partitionValues"), I64("size"),
                                    DeletionVector()}),
      WriteField::Struct("metaData", {Str("id"), Str("name"), Str("description"),
                                      WriteField::Struct("format", {Str("provider"), StrMap("options")}),
                                      Str("schemaString"), StrList("partitionColumns"), StrMap("configuration"),
                                      I64("createdTime")}),
      WriteField::Struct("protocol", {I32("minReaderVersion"), I32("minWriterVersion"), StrList("readerFeatures"),
                                      StrList("writerFeatures")}),
  };
}

// Builds the column of `field` from JSON values (null pointers and JSON nulls are nulls).
ColumnVector Build(const Field& field, const std::vector<const json*>& values) {
  ColumnVector c;
  c.field = &field;
  c.length = static_cast<int64_t>(values.size());
  c.validity.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) c.validity[i] = values[i] && !values[i]->is_null();
  auto valid = [&](size_t i) { return c.validity[i] != 0; };
  switch (field.kind) {
    case Field::Kind::kPrimitive:
      if (field.physical == PhysicalType::kByteArray) {
        c.offsets.push_back(0);
        for (size_t i = 0; i < values.size(); ++i) {
          if (valid(i)) {
            std::string s = values[i]->is_string() ? values[i]->get<std::string>() : values[i]->dump();
            AppendBytes(c.data, s.data(), s.size());
          }
          c.offsets.push_back(static_cast<int64_t>(c.data.size()));
        }
      } else {
        for (size_t i = 0; i < values.size(); ++i) {
          if (field.physical == PhysicalType::kBoolean) {
            c.data.push_back(valid(i) && values[i]->is_boolean() && values[i]->get<bool>() ? 1 : 0);
          } else if (field.physical == PhysicalType::kInt32) {
            int32_t v = valid(i) && values[i]->is_number_integer() ? values[i]->get<int32_t>() : 0;
            AppendBytes(c.data, &v, 4);
          } else {
            int64_t v = valid(i) && values[i]->is_number_integer() ? values[i]->get<int64_t>() : 0;
            AppendBytes(c.data, &v, 8);
          }
        }
      }
      break;
    case Field::Kind::kStruct:
      for (const Field& child : field.children) {
        std::vector<const json*> child_values;
        for (size_t i = 0; i < values.size(); ++i) {
          const json* v = nullptr;
          if (valid(i) && values[i]->is_object()) {
            auto it = values[i]->find(child.name);
            if (it != values[i]->end()) v = &*it;
          }
          child_values.push_back(v);
        }
        c.children.push_back(Build(child, child_values));
      }
      break;
    case Field::Kind::kList: {
      std::vector<const json*> elements;
      c.offsets.push_back(0);
      for (size_t i = 0; i < values.size(); ++i) {
        if (valid(i) && values[i]->is_array()) {
          for (const json& e : *values[i]) elements.push_back(&e);
        }
        c.offsets.push_back(static_cast<int64_t>(elements.size()));
      }
      c.children.push_back(Build(field.children[0], elements));
      break;
    }
    case Field::Kind::kMap: {
      // A JSON object's items become the entries struct's (key, value) rows.
      std::vector<json> entries;
      c.offsets.push_back(0);
      for (size_t i = 0; i < values.size(); ++i) {
        if (valid(i) && values[i]->is_object()) {
          for (auto it = values[i]->begin(); it != values[i]->end(); ++it) entries.push_back({{"key", it.key()}, {"value", it.value()}});
        }
        c.offsets.push_back(static_cast<int64_t>(entries.size()));
      }
      std::vector<const json*> entry_values;
      for (const json& e : entries) entry_values.push_back(&e);
      ColumnVector entry_column = Build(field.children[0], entry_values);
      entry_column.validity.clear();  // the entries themselves are never null
      c.children.push_back(std::move(entry_column));
      break;
    }
  }
  if (std::find(c.validity.begin(), c.validity.end(), 0) == c.validity.end()) c.validity.clear();
  return c;
}

json DeletionVectorJson(const DeletionVectorDescriptor& dv) {
  json out = {{"storageType", dv.storage_type}, {"pathOrInlineDv", dv.path_or_inline},
              {"sizeInBytes", dv.size_in_bytes}, {"cardinality", dv.cardinality}};
  if (dv.offset) out["offset"] = *dv.offset;
  return out;
}

json PartitionValuesJson(const AddFile& f) {
  json out = json::object();
  for (const auto& [k, v] : f.partition_values) out[k] = v ? json(*v) : json();
  return out;
}

}  // namespace

CheckpointResult WriteCheckpoint(const std::string& table_path, int64_t version) {
  Snapshot s = LoadSnapshot(table_path, version < 0 ? std::nullopt : std::optional<int64_t>(version));
  // One action per row.
  std::vector<json> rows;
  json protocol = {{"minReaderVersion", s.protocol.min_reader_version}, {"minWriterVersion", s.protocol.min_writer_version}};
  if (s.protocol.min_reader_version >= 3) protocol["readerFeatures"] = s.protocol.reader_features;
  if (s.protocol.min_writer_version >= 7) protocol["writerFeatures"] = s.protocol.writer_features;
  rows.push_back({{"protocol", protocol}});
  json metadata = {{"id", s.metadata.id},
                   {"format", {{"provider", "parquet"}, {"options", json::object()}}},
                   {"schemaString", s.metadata.schema_string},
                   {"partitionColumns", s.metadata.partition_columns},
                   {"configuration", s.metadata.configuration}};
  if (s.metadata.created_time) metadata["createdTime"] = *s.metadata.created_time;
  rows.push_back({{"metaData", metadata}});
  for (const auto& [app, v] : s.transactions) rows.push_back({{"txn", {{"appId", app}, {"version", v}}}});
  for (const AddFile& f : s.files) {
    json add = {{"path", f.path}, {"partitionValues", PartitionValuesJson(f)}, {"size", f.size},
                {"modificationTime", f.modification_time}, {"dataChange", false}};
    if (f.stats) add["stats"] = *f.stats;
    if (f.deletion_vector) add["deletionVector"] = DeletionVectorJson(*f.deletion_vector);
    rows.push_back({{"add", add}});
  }
  for (const auto& [path, when] : s.tombstones) {
    rows.push_back({{"remove", {{"path", path}, {"deletionTimestamp", when}, {"dataChange", false}}}});
  }
  std::vector<WriteField> fields = CheckpointFields();
  parquet::Schema schema = parquet::Schema::FromElements(parquet::ToSchemaElements(fields));
  parquet::RecordBatch batch;
  batch.num_rows = static_cast<int64_t>(rows.size());
  for (const Field& field : schema.fields()) {
    std::vector<const json*> values;
    for (const json& row : rows) {
      auto it = row.find(field.name);
      values.push_back(it == row.end() ? nullptr : &*it);
    }
    batch.columns.push_back(Build(field, values));
  }
  char name[64];
  std::snprintf(name, sizeof(name), "%020lld.checkpoint.parquet", static_cast<long long>(s.version));
  std::string path = (std::filesystem::path(table_path) / "_delta_log" / name).string();
  parquet::FileWriter writer(path, fields);  // published by rename on Close()
  writer.Write(batch);
  writer.Close();
  json last = {{"version", s.version}, {"size", static_cast<int64_t>(rows.size())}};
  WriteFileAtomically((std::filesystem::path(table_path) / "_delta_log" / "_last_checkpoint").string(), last.dump());
  return {s.version, static_cast<int64_t>(rows.size()), path};
}

}  // namespace shoal::delta
