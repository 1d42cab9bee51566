#include "delta/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "delta/checkpoint.h"
#include "delta/log_internal.h"
#include "delta/snapshot.h"
#include "parquet/predicate.h"
#include "parquet/reader.h"
#include "parquet/value_format.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::delta {

namespace fs = std::filesystem;
using nlohmann::json;
using parquet::Field;
using parquet::LogicalType;
using parquet::PhysicalType;
using parquet::WriteField;

namespace {

json DeltaType(const Field& f) {
  using K = LogicalType::Kind;
  switch (f.kind) {
    case Field::Kind::kStruct: {
      json fields = json::array();
      for (const Field& c : f.children) {
        fields.push_back({{"name", c.name}, {"type", DeltaType(c)}, {"nullable", c.nullable}, {"metadata", json::object()}});
      }
      return {{"type", "struct"}, {"fields", fields}};
    }
    case Field::Kind::kList:
      return {{"type", "array"}, {"elementType", DeltaType(f.children[0])}, {"containsNull", f.children[0].nullable}};
    case Field::Kind::kMap: {
      const Field& entries = f.children[0];
      if (entries.children.size() != 2) throw UnsupportedError("map column '" + f.name + "' has no value field");
      return {{"type", "map"},
              {"keyType", DeltaType(entries.children[0])},
              {"valueType", DeltaType(entries.children[1])},
              {"valueContainsNull", entries.children[1].nullable}};
    }
    case Field::Kind::kPrimitive: break;
  }
  const LogicalType& l = f.logical;
  if (l.kind == K::kDecimal) return "decimal(" + std::to_string(l.precision) + "," + std::to_string(l.scale) + ")";
  switch (f.physical) {
    case PhysicalType::kBoolean: return "boolean";
    case PhysicalType::kInt32:
      if (l.kind == K::kDate) return "date";
      if (l.kind == K::kInteger && l.is_signed && l.bit_width == 8) return "byte";
      if (l.kind == K::kInteger && l.is_signed && l.bit_width == 16) return "short";
      if (l.kind == K::kInteger && !l.is_signed && l.bit_width < 32) return l.bit_width == 8 ? "short" : "integer";
      if (l.kind == K::kInteger && !l.is_signed) return "long";
      if (l.kind == K::kNone || l.kind == K::kInteger) return "integer";
      break;
    case PhysicalType::kInt64:
      if (l.kind == K::kTimestamp && l.unit == parquet::TimeUnit::kMicros) return l.utc_adjusted ? "timestamp" : "timestamp_ntz";
      if (l.kind == K::kNone || (l.kind == K::kInteger && l.is_signed)) return "long";
      break;
    case PhysicalType::kFloat: return "float";
    case PhysicalType::kDouble: return "double";
    case PhysicalType::kByteArray:
      return l.kind == K::kString || l.kind == K::kEnum || l.kind == K::kJson ? "string" : "binary";
    default: break;
  }
  throw UnsupportedError("column '" + f.name + "' is " + std::string(parquet::PhysicalTypeName(f.physical)) +
                         (l.kind == K::kNone ? "" : " " + parquet::LogicalTypeName(l)) + ", which has no Delta type");
}

std::string NewUuid() {
  std::random_device rd;
  std::mt19937_64 random((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  uint64_t a = random(), b = random();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant
  char text[40];
  std::snprintf(text, sizeof(text), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return text;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A statistics value as Delta writes it in add.stats.
json StatJson(const Field& field, const parquet::Literal& v) {
  using K = LogicalType::Kind;
  if (field.logical.kind == K::kDate) return parquet::FormatDate(v.int_value);
  if (field.logical.kind == K::kTimestamp) {
    // Truncated down to milliseconds, as PROTOCOL.md says.
    int64_t micros = v.int_value;
    int64_t ms = micros / 1000 - (micros % 1000 < 0 ? 1 : 0);
    std::string text = parquet::FormatTimestamp(ms, parquet::TimeUnit::kMillis, false);
    if (text.find('.') == std::string::npos) text += ".000000";
    return text.substr(0, text.find('.') + 4) + "Z";
  }
  switch (v.kind) {
    case parquet::Literal::Kind::kInt: return v.int_value;
    case parquet::Literal::Kind::kDouble: return std::isfinite(v.double_value) ? json(v.double_value) : json();
    case parquet::Literal::Kind::kBool: return v.bool_value;
    case parquet::Literal::Kind::kString: return v.string_value;
    default: return json();
  }
}

// add.stats from the row-group statistics of the file just written.
std::string FileStats(const parquet::FileReader& reader) {
  json min = json::object(), max = json::object(), nulls = json::object();
  const parquet::Schema& schema = reader.schema();
  for (const Field& field : schema.fields()) {
    if (field.kind != Field::Kind::kPrimitive || field.logical.kind == LogicalType::Kind::kDecimal ||
        (field.physical == PhysicalType::kByteArray && field.logical.kind != LogicalType::Kind::kString)) {
      continue;
    }
    std::optional<parquet::Literal> lo, hi;
    int64_t null_count = 0;
    bool complete = true;
    for (const parquet::RowGroup& group : reader.metadata().row_groups) {
      std::optional<parquet::ColumnStats> s = parquet::RowGroupStatistics(schema, group, field.name);
      if (!s || !s->null_count) {
        complete = false;
        break;
      }
      null_count += *s->null_count;
      if (s->min && (!lo || parquet::CompareLiterals(*s->min, *lo).value_or(0) < 0)) lo = s->min;
      if (s->max && (!hi || parquet::CompareLiterals(*s->max, *hi).value_or(0) > 0)) hi = s->max;
    }
    if (!complete) continue;
    nulls[field.name] = null_count;
    if (lo) min[field.name] = StatJson(field, *lo);
    if (hi) max[field.name] = StatJson(field, *hi);
  }
  json stats = {{"numRecords", reader.num_rows()}, {"minValues", min}, {"maxValues", max}, {"nullCount", nulls}};
  return stats.dump();
}

// A partition value as PROTOCOL.md serializes it; nothing for null.
std::optional<std::string> PartitionValueString(const parquet::ColumnVector& column, int64_t row) {
  using K = LogicalType::Kind;
  if (!column.IsValid(row)) return std::nullopt;
  const Field& f = *column.field;
  parquet::Literal v = parquet::SlotAsLiteral(column, row);
  if (f.logical.kind == K::kDate) return parquet::FormatDate(v.int_value);
  if (f.logical.kind == K::kTimestamp) {
    std::string text = parquet::FormatTimestamp(v.int_value, f.logical.unit, false);
    text[10] = ' ';  // "YYYY-MM-DD HH:MM:SS[.ffffff]"
    return text;
  }
  switch (v.kind) {
    case parquet::Literal::Kind::kInt: return std::to_string(v.int_value);
    case parquet::Literal::Kind::kBool: return v.bool_value ? "true" : "false";
    case parquet::Literal::Kind::kString: return v.string_value;
    case parquet::Literal::Kind::kDouble: {
      std::string text;
      parquet::AppendJsonDouble(v.double_value, &text);
      if (text.front() == '"') text = text.substr(1, text.size() - 2);
      return text;
    }
    default: return std::nullopt;
  }
}

// Percent-encodes what a path in the log may not hold as it is (PROTOCOL.md: paths are URIs).
std::string UriEncodePath(const std::string& path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("/-_.=~", c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string CommitPath(const std::string& table_path, int64_t version) {
  char name[32];
  std::snprintf(name, sizeof(name), "%020lld.json", static_cast<long long>(version));
  return (fs::path(table_path) / "_delta_log" / name).string();
}

// Publishes `content` as commit `version`: written to a temporary file, fsynced, then linked
// to its name, which fails if that commit exists. Returns false on losing that race.
bool PublishCommit(const std::string& table_path, int64_t version, const std::string& content) {
  std::string target = CommitPath(table_path, version);
  std::string temp = (fs::path(table_path) / "_delta_log" / ("." + NewUuid() + ".json.tmp")).string();
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw SystemError("cannot create", temp, errno);
  try {
    WriteAll(fd, content, temp);
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) {
    ::unlink(temp.c_str());
    throw SystemError("cannot fsync", temp, errno);
  }
  int rc = ::link(temp.c_str(), target.c_str());
  int err = errno;
  ::unlink(temp.c_str());
  if (rc == 0) {
    int dir = ::open((fs::path(table_path) / "_delta_log").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      ::fsync(dir);
      ::close(dir);
    }
    return true;
  }
  if (err == EEXIST) return false;
  throw SystemError("cannot publish commit", target, err);
}

// Does commit `version` (written by another writer) conflict with a blind append?
void CheckWinner(const std::string& table_path, int64_t version, const std::string& schema_string) {
  ForEachJsonLine(CommitPath(table_path, version), [&](const json& action, int) {
    if (!action.is_object()) return;
    if (action.contains("metaData") && action["metaData"].value("schemaString", std::string()) != schema_string) {
      throw ConflictError("a concurrent commit (version " + std::to_string(version) + ") changed the table's schema");
    }
    if (action.contains("protocol") && version > 0) {
      throw ConflictError("a concurrent commit (version " + std::to_string(version) + ") changed the table's protocol");
    }
  });
}

}  // namespace

VacuumResult Vacuum(const std::string& table_path, double retain_hours, bool dry_run) {
  if (retain_hours < 0) throw InvalidError("retention of " + std::to_string(retain_hours) + " hours is negative");
  Snapshot snapshot = LoadSnapshot(table_path);
  std::set<std::string> live;
  for (const AddFile& f : snapshot.files) {
    live.insert(fs::weakly_canonical(DataFilePath(snapshot, f)).string());
  }
  std::map<std::string, int64_t> removed;  // absolute path -> deletion time
  for (const auto& [path, when] : snapshot.tombstones) {
    AddFile f;
    f.path = path;
    removed[fs::weakly_canonical(DataFilePath(snapshot, f)).string()] = when;
  }
  int64_t boundary = NowMs() - static_cast<int64_t>(retain_hours * 3600.0 * 1000.0);
  VacuumResult result;
  fs::path root = fs::weakly_canonical(table_path);
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    std::string name = it->path().filename().string();
    // The log, and hidden or underscore-prefixed entries (Spark's convention), are not data.
    if (!name.empty() && (name[0] == '_' || name[0] == '.')) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    std::string path = it->path().string();
    if (live.count(path)) continue;
    // Deletion vector files of live files stay too.
    if (name.rfind("deletion_vector_", 0) == 0) {
      bool used = false;
      for (const AddFile& f : snapshot.files) used |= f.deletion_vector && f.deletion_vector->storage_type != "i";
      if (used) continue;
    }
    auto r = removed.find(path);
    int64_t left = r != removed.end()
                       ? r->second
                       : std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::file_clock::to_sys(fs::last_write_time(it->path())).time_since_epoch())
                             .count();
    if (left > boundary) {
      ++result.kept_for_retention;
      continue;
    }
    if (!dry_run) {
      std::error_code ec;
      fs::remove(it->path(), ec);
      if (ec) throw SystemError("cannot delete", path, ec.value());
    }
    result.deleted.push_back(fs::relative(it->path(), root).string());
  }
  std::sort(result.deleted.begin(), result.deleted.end());
  return result;
}

std::string DeltaSchemaString(const parquet::Schema& schema) {
  json fields = json::array();
  for (const Field& f : schema.fields()) {
    fields.push_back({{"name", f.name}, {"type", DeltaType(f)}, {"nullable", f.nullable}, {"metadata", json::object()}});
  }
  return json{{"type", "struct"}, {"fields", fields}}.dump();
}

AppendResult AppendToTable(const std::string& table_path, const parquet::Schema& schema,
                           const std::vector<parquet::RecordBatch>& batches, const AppendOptions& options) {
  size_t next = 0;
  return AppendToTable(
      table_path, schema,
      [&](parquet::RecordBatch* batch) {
        if (next >= batches.size()) return false;
        *batch = batches[next++];
        return true;
      },
      options);
}

AppendResult AppendToTable(const std::string& table_path, const parquet::Schema& schema, const BatchSource& next,
                           const AppendOptions& options) {
  std::string schema_string = DeltaSchemaString(schema);
  std::error_code ec;
  fs::create_directories(fs::path(table_path) / "_delta_log", ec);
  if (ec) throw SystemError("cannot create", (fs::path(table_path) / "_delta_log").string(), ec.value());

  // Partition columns: the table's when it exists, else the options'.
  std::vector<std::string> partition_columns = options.partition_columns;
  try {
    Snapshot existing = LoadSnapshot(table_path);
    partition_columns = existing.metadata.partition_columns;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
  }
  std::vector<int> partition_fields;  // indices into schema.fields()
  std::vector<int> data_fields;
  for (const std::string& name : partition_columns) {
    int index = schema.FieldIndex(name);
    if (index < 0) throw InvalidError("partition column '" + name + "' is not a column of the data");
    if (schema.fields()[index].kind != Field::Kind::kPrimitive) {
      throw InvalidError("partition column '" + name + "' is not a primitive column");
    }
    partition_fields.push_back(index);
  }
  for (size_t i = 0; i < schema.fields().size(); ++i) {
    if (std::find(partition_fields.begin(), partition_fields.end(), static_cast<int>(i)) == partition_fields.end()) {
      data_fields.push_back(static_cast<int>(i));
    }
  }
  if (data_fields.empty()) throw InvalidError("every column is a partition column: the data files would hold none");
  std::vector<WriteField> data_write_fields;
  for (int i : data_fields) data_write_fields.push_back(parquet::WriteFieldOf(schema.fields()[i]));

  // The data files first: until the commit names them, readers never see them.
  AppendResult result;
  std::vector<std::string> data_paths;
  std::vector<json> adds;
  auto remove_data = [&] {
    for (const std::string& p : data_paths) fs::remove(p, ec);
  };
  // One open file per partition (one file in all without partitions).
  struct OpenFile {
    std::unique_ptr<parquet::FileWriter> writer;
    std::string relative_path;
    json partition_values;
  };
  std::map<std::string, OpenFile> open_files;
  auto close_file = [&](OpenFile& f) {
    f.writer->Close();
    std::string data_path = (fs::path(table_path) / f.relative_path).string();
    result.rows += f.writer->rows_written();
    adds.push_back({{"add",
                     {{"path", UriEncodePath(f.relative_path)},
                      {"partitionValues", f.partition_values},
                      {"size", static_cast<int64_t>(fs::file_size(data_path))},
                      {"modificationTime", NowMs()},
                      {"dataChange", true},
                      {"stats", FileStats(*parquet::FileReader::Open(data_path))}}}});
    f.writer.reset();
  };
  try {
    parquet::RecordBatch batch;
    while (next(&batch)) {
      if (batch.columns.size() != schema.fields().size()) {
        throw InvalidError("a batch has " + std::to_string(batch.columns.size()) + " columns, the data's schema " +
                           std::to_string(schema.fields().size()));
      }
      for (size_t i = 0; i < batch.columns.size(); ++i) parquet::BindField(batch.columns[i], schema.fields()[i]);
      // Rows by partition: the serialized values of the partition columns.
      std::map<std::string, std::pair<json, std::vector<uint8_t>>> groups;
      for (int64_t r = 0; r < batch.num_rows; ++r) {
        json values = json::object();
        std::string key;
        for (size_t p = 0; p < partition_fields.size(); ++p) {
          std::optional<std::string> v = PartitionValueString(batch.columns[partition_fields[p]], r);
          values[partition_columns[p]] = v ? json(*v) : json();
          key += (v ? "=" + *v : "\x01") + '\x00';
        }
        auto& group = groups[key];
        if (group.second.empty()) {
          group.first = values;
          group.second.assign(static_cast<size_t>(batch.num_rows), 0);
        }
        group.second[r] = 1;
      }
      for (auto& [key, group] : groups) {
        parquet::RecordBatch rows = partition_fields.empty() ? batch : parquet::FilterBatch(batch, group.second);
        parquet::RecordBatch data;
        data.num_rows = rows.num_rows;
        for (int i : data_fields) data.columns.push_back(std::move(rows.columns[i]));
        OpenFile& f = open_files[key];
        if (f.writer && options.rows_per_file > 0 && f.writer->rows_written() >= options.rows_per_file) close_file(f);
        if (!f.writer) {
          char part[16];
          std::snprintf(part, sizeof(part), "part-%05zu-", data_paths.size() % 100000);
          std::string dir;
          for (size_t p = 0; p < partition_columns.size(); ++p) {
            const json& v = group.first[partition_columns[p]];
            dir += partition_columns[p] + "=" + (v.is_null() ? "__HIVE_DEFAULT_PARTITION__" : v.get<std::string>()) + "/";
          }
          f.relative_path = dir + part + NewUuid() + "-c000.snappy.parquet";
          f.partition_values = group.first;
          std::string data_path = (fs::path(table_path) / f.relative_path).string();
          fs::create_directories(fs::path(data_path).parent_path());
          data_paths.push_back(data_path);
          f.writer = std::make_unique<parquet::FileWriter>(data_path, data_write_fields, options.parquet);
        }
        f.writer->Write(data);
      }
    }
    if (open_files.empty() && partition_fields.empty()) {  // no rows: one empty file keeps the schema
      OpenFile& f = open_files[""];
      f.relative_path = "part-00000-" + NewUuid() + "-c000.snappy.parquet";
      f.partition_values = json::object();
      std::string data_path = (fs::path(table_path) / f.relative_path).string();
      data_paths.push_back(data_path);
      f.writer = std::make_unique<parquet::FileWriter>(data_path, data_write_fields, options.parquet);
    }
    for (auto& [key, f] : open_files) {
      if (f.writer) close_file(f);
    }
    for (int attempt = 0; attempt < options.max_attempts; ++attempt) {
      // The table's state now: its version, or none.
      int64_t current = -1;
      std::optional<Snapshot> snapshot;
      try {
        snapshot = LoadSnapshot(table_path);
        current = snapshot->version;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kNotFound) throw;
      }
      if (snapshot) {
        if (snapshot->metadata.schema_string != schema_string) {
          throw InvalidError("the data's schema " + schema_string + " differs from the schema of table '" + table_path +
                             "': " + snapshot->metadata.schema_string);
        }
        if (!options.app_id.empty()) {
          auto it = snapshot->transactions.find(options.app_id);
          if (it != snapshot->transactions.end() && it->second >= options.app_version) {
            remove_data();
            result.version = current;
            result.duplicate = true;
            result.rows = 0;
            return result;
          }
        }
      }
      std::string commit;
      int64_t now = NowMs();
      bool overwrite = options.overwrite && current >= 0;
      commit += json{{"commitInfo",
                      {{"timestamp", now},
                       {"operation", current < 0 ? "CREATE TABLE AS SELECT" : "WRITE"},
                       {"operationParameters", {{"mode", current < 0 ? "ErrorIfExists" : overwrite ? "Overwrite" : "Append"}}},
                       {"isBlindAppend", !overwrite},
                       {"engineInfo", "shoal/0.1.0"}}}}
                    .dump() +
                "\n";
      if (current < 0) {
        commit += json{{"protocol", {{"minReaderVersion", 1}, {"minWriterVersion", 2}}}}.dump() + "\n";
        commit += json{{"metaData",
                        {{"id", NewUuid()},
                         {"format", {{"provider", "parquet"}, {"options", json::object()}}},
                         {"schemaString", schema_string},
                         {"partitionColumns", partition_columns},
                         {"configuration", options.configuration},
                         {"createdTime", now}}}}
                      .dump() +
                  "\n";
      }
      if (!options.app_id.empty()) {
        commit += json{{"txn", {{"appId", options.app_id}, {"version", options.app_version}, {"lastUpdated", now}}}}.dump() + "\n";
      }
      if (overwrite) {
        // Remove what this attempt saw; a retry after losing the race re-reads and removes again.
        for (const AddFile& f : snapshot->files) {
          json remove = {{"path", f.path},
                         {"deletionTimestamp", now},
                         {"dataChange", true},
                         {"extendedFileMetadata", true},
                         {"partitionValues", json::object()},
                         {"size", f.size}};
          for (const auto& [k, v] : f.partition_values) remove["partitionValues"][k] = v ? json(*v) : json();
          if (f.deletion_vector) {
            const DeletionVectorDescriptor& dv = *f.deletion_vector;
            remove["deletionVector"] = {{"storageType", dv.storage_type}, {"pathOrInlineDv", dv.path_or_inline},
                                        {"sizeInBytes", dv.size_in_bytes}, {"cardinality", dv.cardinality}};
            if (dv.offset) remove["deletionVector"]["offset"] = *dv.offset;
          }
          commit += json{{"remove", remove}}.dump() + "\n";
        }
      }
      for (const json& add : adds) commit += add.dump() + "\n";
      if (PublishCommit(table_path, current + 1, commit)) {
        result.version = current + 1;
        result.files = static_cast<int64_t>(adds.size());
        result.created = current < 0;
        if (options.checkpoint_interval > 0 && result.version > 0 && result.version % options.checkpoint_interval == 0) {
          try {
            WriteCheckpoint(table_path, result.version);
            result.checkpointed = true;
          } catch (const Error& e) {
            result.checkpoint_error = e.what();  // readers replay the commits instead
          }
        }
        return result;
      }
      // Another writer took that version: an append may go on unless it changed the table (an
      // overwrite recomputes its removes from the new state on the next attempt).
      CheckWinner(table_path, current + 1, schema_string);
    }
    throw ConflictError("gave up appending to '" + table_path + "' after " + std::to_string(options.max_attempts) +
                        " attempts lost to concurrent writers");
  } catch (...) {
    remove_data();  // nothing refers to them: the table is as it was
    throw;
  }
}

}  // namespace shoal::delta
