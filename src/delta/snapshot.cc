#include "delta/snapshot.h"

#include "delta/log_internal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <filesystem>
#include <memory>
#include <set>
#include <unordered_map>

#include "parquet/reader.h"
#include "parquet/value_format.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::delta {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// ---- listing ----

struct CheckpointFile {
  enum class Kind { kClassic, kMultiPart, kV2 };
  Kind kind = Kind::kClassic;
  int64_t version = 0;
  int part = 1, parts = 1;
  std::string path;
};

struct LogListing {
  std::map<int64_t, std::string> commits;
  std::map<int64_t, std::vector<CheckpointFile>> checkpoints;
};

bool AllDigits(const std::string& s, size_t begin, size_t length) {
  if (begin + length > s.size()) return false;
  for (size_t i = begin; i < begin + length; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

LogListing ListLog(const std::string& table_path) {
  fs::path log_dir = fs::path(table_path) / "_delta_log";
  std::error_code ec;
  if (!fs::is_directory(table_path, ec)) throw NotFoundError("no table at '" + table_path + "': not a directory");
  if (!fs::is_directory(log_dir, ec)) {
    throw NotFoundError("'" + table_path + "' is not a Delta table: it has no _delta_log directory");
  }
  LogListing listing;
  for (const auto& entry : fs::directory_iterator(log_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!AllDigits(name, 0, 20)) continue;
    int64_t version = std::stoll(name.substr(0, 20));
    std::string rest = name.substr(20);
    if (rest == ".json") {
      listing.commits[version] = entry.path().string();
    } else if (rest == ".checkpoint.parquet") {
      listing.checkpoints[version].push_back({CheckpointFile::Kind::kClassic, version, 1, 1, entry.path().string()});
    } else if (rest.size() == 41 && rest.rfind(".checkpoint.", 0) == 0 && AllDigits(rest, 12, 10) &&
               rest[22] == '.' && AllDigits(rest, 23, 10) && rest.substr(33) == ".parquet") {
      int part = std::stoi(rest.substr(12, 10)), parts = std::stoi(rest.substr(23, 10));
      listing.checkpoints[version].push_back({CheckpointFile::Kind::kMultiPart, version, part, parts, entry.path().string()});
    } else if (rest.rfind(".checkpoint.", 0) == 0 && ((rest.size() == 12 + 36 + 5 && rest.substr(48) == ".json") ||
                                                      (rest.size() == 12 + 36 + 8 && rest.substr(48) == ".parquet"))) {
      // V2: .checkpoint.<uuid>.json or .parquet
      listing.checkpoints[version].push_back({CheckpointFile::Kind::kV2, version, 1, 1, entry.path().string()});
    }
  }
  if (ec) throw SystemError("cannot list", log_dir.string(), ec.value());
  return listing;
}

// The files of a complete checkpoint at `version`: a classic one, a V2 one, or every part of a
// multi-part set (incomplete sets are ignored). Empty when there is none.
std::vector<CheckpointFile> CompleteCheckpoint(const std::vector<CheckpointFile>& files) {
  for (const CheckpointFile& f : files) {
    if (f.kind == CheckpointFile::Kind::kV2 || f.kind == CheckpointFile::Kind::kClassic) return {f};
  }
  std::map<int, std::map<int, CheckpointFile>> sets;  // parts -> part -> file
  for (const CheckpointFile& f : files) sets[f.parts][f.part] = f;
  for (const auto& [parts, members] : sets) {
    if (static_cast<int>(members.size()) == parts && members.begin()->first == 1 && members.rbegin()->first == parts) {
      std::vector<CheckpointFile> out;
      for (const auto& [part, f] : members) out.push_back(f);
      return out;
    }
  }
  return {};
}

// ---- actions ----

// Checkpoints render maps as [{"key","value"}]; commits write JSON objects. Accept both.
std::map<std::string, std::optional<std::string>> StringMap(const json& value, const std::string& what) {
  std::map<std::string, std::optional<std::string>> out;
  if (value.is_null()) return out;
  auto put = [&](const std::string& key, const json& v) {
    if (v.is_null()) out[key] = std::nullopt;
    else if (v.is_string()) out[key] = v.get<std::string>();
    else out[key] = v.dump();
  };
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) put(it.key(), it.value());
  } else if (value.is_array()) {
    for (const json& e : value) {
      if (!e.is_object() || !e.contains("key") || !e["key"].is_string()) throw InvalidError(what + " is not a string map");
      put(e["key"].get<std::string>(), e.value("value", json()));
    }
  } else {
    throw InvalidError(what + " is not a string map");
  }
  return out;
}

std::vector<std::string> StringList(const json& value, const std::string& what) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  if (!value.is_array()) throw InvalidError(what + " is not a list");
  for (const json& e : value) {
    if (!e.is_string()) throw InvalidError(what + " holds a non-string");
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::string RequiredString(const json& action, const char* key, const std::string& what) {
  auto it = action.find(key);
  if (it == action.end() || !it->is_string()) throw InvalidError(what + " has no string '" + key + "'");
  return it->get<std::string>();
}

int64_t NumberOr(const json& action, const char* key, int64_t fallback) {
  auto it = action.find(key);
  if (it == action.end() || it->is_null()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) return std::stoll(it->get<std::string>());
  return fallback;
}

std::string DeletionVectorId(const json& dv) {
  if (!dv.is_object()) return "";
  std::string id = dv.value("storageType", std::string()) + dv.value("pathOrInlineDv", std::string());
  if (dv.contains("offset") && dv["offset"].is_number_integer()) id += "@" + std::to_string(dv["offset"].get<int64_t>());
  return id;
}

class Replayer {
 public:
  explicit Replayer(Snapshot* snapshot) : snapshot_(snapshot) {}

  // Applies one action object (one line of a commit, or one checkpoint row).
  void Apply(const json& action, const std::string& where) {
    if (!action.is_object()) throw InvalidError(where + ": an action is not a JSON object");
    for (auto it = action.begin(); it != action.end(); ++it) {
      const json& body = it.value();
      if (body.is_null()) continue;  // checkpoint rows hold one action and nulls
      const std::string& kind = it.key();
      if (kind == "add") Add(body, where);
      else if (kind == "remove") Remove(body, where);
      else if (kind == "metaData") MetaData(body, where);
      else if (kind == "protocol") ProtocolAction(body, where);
      else if (kind == "txn") {
        snapshot_->transactions[RequiredString(body, "appId", where + ": txn")] = NumberOr(body, "version", -1);
      } else if (kind == "sidecar") {
        sidecars_.push_back(RequiredString(body, "path", where + ": sidecar"));
      }
      // commitInfo, cdc, domainMetadata, checkpointMetadata: no effect on the files read.
    }
  }

  /// Room for `n` more live files (a checkpoint's rows), so the map does not rehash as it fills.
  void Reserve(size_t n) { live_.reserve(live_.size() + n); }

  // An add decoded straight from a checkpoint's columns (see AddFromColumns).
  void AddDecoded(AddFile f) {
    std::string key = Key(f.path, f.deletion_vector_id);
    snapshot_->tombstones.erase(f.path);
    live_[key] = std::move(f);
  }

  std::vector<std::string> TakeSidecars() { return std::move(sidecars_); }

  void Finish() {
    // Sort pointers, then move each file once: sorting the files themselves moves each
    // O(log n) times, which dominated loading 100,000 files.
    std::vector<AddFile*> order;
    order.reserve(live_.size());
    for (auto& [key, file] : live_) order.push_back(&file);
    std::sort(order.begin(), order.end(), [](const AddFile* a, const AddFile* b) { return a->path < b->path; });
    snapshot_->files.clear();
    snapshot_->files.reserve(order.size());
    for (AddFile* file : order) snapshot_->files.push_back(std::move(*file));
    live_.clear();
  }

  bool has_protocol = false, has_metadata = false;

 private:
  static std::string Key(const std::string& path, const std::string& dv) { return path + '\n' + dv; }

  void Add(const json& body, const std::string& where) {
    AddFile f;
    f.path = RequiredString(body, "path", where + ": add");
    f.partition_values = StringMap(body.value("partitionValues", json()), where + ": add.partitionValues");
    f.size = NumberOr(body, "size", 0);
    f.modification_time = NumberOr(body, "modificationTime", 0);
    if (body.contains("stats") && body["stats"].is_string()) f.stats = body["stats"].get<std::string>();
    json dv = body.value("deletionVector", json());
    if (dv.is_object()) {
      DeletionVectorDescriptor d;
      d.storage_type = RequiredString(dv, "storageType", where + ": add.deletionVector");
      d.path_or_inline = RequiredString(dv, "pathOrInlineDv", where + ": add.deletionVector");
      if (dv.contains("offset") && dv["offset"].is_number_integer()) d.offset = dv["offset"].get<int64_t>();
      d.size_in_bytes = NumberOr(dv, "sizeInBytes", 0);
      d.cardinality = NumberOr(dv, "cardinality", 0);
      f.deletion_vector = d;
    }
    f.deletion_vector_id = DeletionVectorId(dv);
    std::string key = Key(f.path, f.deletion_vector_id);
    snapshot_->tombstones.erase(f.path);
    live_[key] = std::move(f);
  }

  void Remove(const json& body, const std::string& where) {
    std::string path = RequiredString(body, "path", where + ": remove");
    snapshot_->tombstones[path] = NumberOr(body, "deletionTimestamp", 0);
    live_.erase(Key(path, DeletionVectorId(body.value("deletionVector", json()))));
  }

  void MetaData(const json& body, const std::string& where) {
    Metadata m;
    m.id = body.value("id", std::string());
    m.schema_string = RequiredString(body, "schemaString", where + ": metaData");
    m.partition_columns = StringList(body.value("partitionColumns", json()), where + ": metaData.partitionColumns");
    for (auto& [k, v] : StringMap(body.value("configuration", json()), where + ": metaData.configuration")) {
      if (v) m.configuration[k] = *v;
    }
    if (body.contains("createdTime") && body["createdTime"].is_number_integer()) m.created_time = body["createdTime"].get<int64_t>();
    snapshot_->metadata = std::move(m);
    has_metadata = true;
  }

  void ProtocolAction(const json& body, const std::string& where) {
    Protocol p;
    p.min_reader_version = static_cast<int32_t>(NumberOr(body, "minReaderVersion", 0));
    p.min_writer_version = static_cast<int32_t>(NumberOr(body, "minWriterVersion", 0));
    p.reader_features = StringList(body.value("readerFeatures", json()), where + ": protocol.readerFeatures");
    p.writer_features = StringList(body.value("writerFeatures", json()), where + ": protocol.writerFeatures");
    snapshot_->protocol = std::move(p);
    has_protocol = true;
  }

  Snapshot* snapshot_;
  std::unordered_map<std::string, AddFile> live_;
  std::vector<std::string> sidecars_;
};

void ApplyJsonFile(const std::string& path, const std::string& what, Replayer& replayer) {
  ForEachJsonLine(path, [&](const json& action, int line_number) {
    std::string where = what + " ('" + path + "' line " + std::to_string(line_number) + ")";
    if (action.is_discarded()) throw InvalidError(where + ": not valid JSON");
    replayer.Apply(action, where);
  });
}

// ---- checkpoint columns ----

const parquet::ColumnVector* Child(const parquet::ColumnVector& parent, const char* name) {
  for (size_t k = 0; k < parent.children.size(); ++k) {
    if (parent.field->children[k].name == name) return &parent.children[k];
  }
  return nullptr;
}

std::optional<std::string> StringAt(const parquet::ColumnVector* c, int64_t r) {
  if (!c || !c->IsValid(r) || c->field->physical != parquet::PhysicalType::kByteArray) return std::nullopt;
  return std::string(c->Bytes(r));
}

std::optional<int64_t> IntAt(const parquet::ColumnVector* c, int64_t r) {
  if (!c || !c->IsValid(r)) return std::nullopt;
  if (c->field->physical == parquet::PhysicalType::kInt64) return c->Value<int64_t>(r);
  if (c->field->physical == parquet::PhysicalType::kInt32) return c->Value<int32_t>(r);
  return std::nullopt;
}

// The `add` action of checkpoint row r, read from its columns: the JSON rendering costs most of
// a checkpoint's load time when it lists many files. Returns false when the row has no add.
bool AddFromColumns(const parquet::ColumnVector& add, int64_t r, const std::string& where, AddFile* out) {
  if (add.field->kind != parquet::Field::Kind::kStruct || !add.IsValid(r)) return false;
  std::optional<std::string> path = StringAt(Child(add, "path"), r);
  if (!path) throw InvalidError(where + ": add has no string 'path'");
  AddFile f;
  f.path = std::move(*path);
  f.size = IntAt(Child(add, "size"), r).value_or(0);
  f.modification_time = IntAt(Child(add, "modificationTime"), r).value_or(0);
  f.stats = StringAt(Child(add, "stats"), r);
  if (const parquet::ColumnVector* pv = Child(add, "partitionValues");
      pv && pv->field->kind == parquet::Field::Kind::kMap && pv->IsValid(r)) {
    const parquet::ColumnVector& entries = pv->children[0];
    for (int64_t e = pv->offsets[r]; e < pv->offsets[r + 1]; ++e) {
      std::optional<std::string> key = StringAt(entries.children.empty() ? nullptr : &entries.children[0], e);
      if (!key) throw InvalidError(where + ": add.partitionValues has a key that is not a string");
      f.partition_values[*key] = StringAt(entries.children.size() > 1 ? &entries.children[1] : nullptr, e);
    }
  }
  if (const parquet::ColumnVector* dv = Child(add, "deletionVector");
      dv && dv->field->kind == parquet::Field::Kind::kStruct && dv->IsValid(r)) {
    DeletionVectorDescriptor d;
    std::optional<std::string> storage = StringAt(Child(*dv, "storageType"), r);
    std::optional<std::string> inline_or_path = StringAt(Child(*dv, "pathOrInlineDv"), r);
    if (!storage || !inline_or_path) throw InvalidError(where + ": add.deletionVector lacks storageType or pathOrInlineDv");
    d.storage_type = *storage;
    d.path_or_inline = *inline_or_path;
    d.offset = IntAt(Child(*dv, "offset"), r);
    d.size_in_bytes = IntAt(Child(*dv, "sizeInBytes"), r).value_or(0);
    d.cardinality = IntAt(Child(*dv, "cardinality"), r).value_or(0);
    f.deletion_vector_id = d.storage_type + d.path_or_inline + (d.offset ? "@" + std::to_string(*d.offset) : "");
    f.deletion_vector = std::move(d);
  }
  *out = std::move(f);
  return true;
}

// Each checkpoint row through the `cat` JSON mapping has the shape of a commit line; add rows,
// the many, are read from their columns instead.
void ApplyParquetFile(const std::string& path, const std::string& what, Replayer& replayer) {
  std::unique_ptr<parquet::FileReader> reader;
  try {
    reader = parquet::FileReader::Open(path);
  } catch (const Error& e) {
    throw WithContext(e, what);
  }
  std::vector<std::string> wanted;
  for (const char* name : {"add", "remove", "metaData", "protocol", "txn", "sidecar"}) {
    if (reader->schema().FieldIndex(name) >= 0) wanted.push_back(name);
  }
  std::vector<int> fields = reader->ResolveFields(wanted);
  replayer.Reserve(static_cast<size_t>(std::max<int64_t>(0, reader->num_rows())));
  std::string line;
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    parquet::RecordBatch batch;
    try {
      batch = reader->ReadRowGroup(g, fields);
    } catch (const Error& e) {
      throw WithContext(e, what);
    }
    const parquet::ColumnVector* add = nullptr;
    for (size_t c = 0; c < batch.columns.size(); ++c) {
      if (batch.field(c).name == "add") add = &batch.columns[c];
    }
    std::string where = what + " ('" + path + "' row group " + std::to_string(g) + ")";
    for (int64_t r = 0; r < batch.num_rows; ++r) {
      AddFile file;
      bool other_actions = false;  // a row holds one action, but check rather than assume
      for (size_t c = 0; c < batch.columns.size(); ++c) {
        if (&batch.columns[c] != add && batch.columns[c].IsValid(r)) other_actions = true;
      }
      if (add && !other_actions && AddFromColumns(*add, r, where, &file)) {
        replayer.AddDecoded(std::move(file));
        continue;
      }
      line.clear();
      parquet::AppendJsonRow(batch, r, &line);
      replayer.Apply(json::parse(line), where);
    }
  }
}

void ApplyCheckpoint(const std::string& table_path, const std::vector<CheckpointFile>& files, Replayer& replayer) {
  std::string what = "checkpoint of version " + std::to_string(files.front().version);
  for (const CheckpointFile& f : files) {
    bool is_json = f.path.size() > 5 && f.path.substr(f.path.size() - 5) == ".json";
    if (is_json) {
      ApplyJsonFile(f.path, what, replayer);
    } else {
      ApplyParquetFile(f.path, what, replayer);
    }
  }
  // V2 checkpoints list their file actions in sidecar files under _delta_log/_sidecars.
  for (const std::string& sidecar : replayer.TakeSidecars()) {
    std::string path = (fs::path(table_path) / "_delta_log" / "_sidecars" / UriDecode(sidecar)).string();
    ApplyParquetFile(path, what + " sidecar", replayer);
  }
}

// Features this reader implements (PROTOCOL.md, reader table features).
const std::set<std::string>& SupportedReaderFeatures() {
  static const std::set<std::string> kSupported = {"columnMapping", "timestampNtz", "v2Checkpoint",
                                                   "vacuumProtocolCheck", "deletionVectors"};
  return kSupported;
}

void CheckProtocol(const Snapshot& s) {
  const Protocol& p = s.protocol;
  std::string at = "table '" + s.table_path + "' at version " + std::to_string(s.version);
  if (p.min_reader_version < 1 || p.min_reader_version > 3) {
    throw UnsupportedError(at + " requires reader version " + std::to_string(p.min_reader_version) +
                           "; shoal reads versions 1 to 3");
  }
  if (p.min_reader_version == 3) {
    for (const std::string& feature : p.reader_features) {
      if (!SupportedReaderFeatures().count(feature)) {
        throw UnsupportedError(at + " requires the reader feature '" + feature + "', which shoal does not support");
      }
    }
  }
}

}  // namespace

int64_t VersionAtTimestamp(const std::string& table_path, int64_t timestamp_ms) {
  LogListing listing = ListLog(table_path);
  int64_t found = -1;
  for (const auto& [version, path] : listing.commits) {
    auto mtime = fs::last_write_time(path);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::file_clock::to_sys(mtime).time_since_epoch()).count();
    if (ms <= timestamp_ms) found = version;
  }
  if (found < 0) {
    throw NotFoundError("table '" + table_path + "' has no version committed at or before the given timestamp");
  }
  return found;
}

void ForEachJsonLine(const std::string& path, const std::function<void(const json&, int)>& on_line) {
  std::vector<uint8_t> bytes = ReadFile(path);
  std::string text(bytes.begin(), bytes.end());
  size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line_number;
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    on_line(json::parse(line, nullptr, false), line_number);
  }
}

std::vector<CommitInfo> History(const std::string& table_path) {
  LogListing listing = ListLog(table_path);
  std::vector<CommitInfo> out;
  for (const auto& [version, path] : listing.commits) {
    CommitInfo info;
    info.version = version;
    info.timestamp_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::file_clock::to_sys(fs::last_write_time(path)).time_since_epoch())
                            .count();
    bool seen = false;
    ForEachJsonLine(path, [&](const json& line, int) {
      if (seen || !line.is_object() || !line.contains("commitInfo") || !line["commitInfo"].is_object()) return;
      const json& c = line["commitInfo"];
      if (c.contains("timestamp") && c["timestamp"].is_number_integer()) info.timestamp_ms = c["timestamp"].get<int64_t>();
      info.operation = c.value("operation", std::string());
      if (c.contains("operationParameters")) info.operation_parameters_json = c["operationParameters"].dump();
      seen = true;
    });
    out.push_back(std::move(info));
  }
  return out;
}

std::string UriDecode(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      throw InvalidError("malformed %-escape in path '" + text + "'");
    }
    out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
    i += 2;
  }
  return out;
}

std::string DataFilePath(const Snapshot& snapshot, const AddFile& file) {
  std::string path = file.path;
  if (path.rfind("file://", 0) == 0) return UriDecode(path.substr(7));
  if (path.rfind("file:", 0) == 0) return UriDecode(path.substr(5));
  if (path.find("://") != std::string::npos) {
    throw UnsupportedError("data file '" + path + "' is on a remote file system; shoal reads local tables");
  }
  return (fs::path(snapshot.table_path) / UriDecode(path)).string();
}

Snapshot LoadSnapshot(const std::string& table_path, std::optional<int64_t> version) {
  LogListing listing = ListLog(table_path);
  if (listing.commits.empty() && listing.checkpoints.empty()) {
    throw NotFoundError("'" + table_path + "' is not a Delta table: _delta_log holds no commits");
  }
  int64_t latest = std::max(listing.commits.empty() ? -1 : listing.commits.rbegin()->first,
                            listing.checkpoints.empty() ? -1 : listing.checkpoints.rbegin()->first);
  int64_t target = version.value_or(latest);
  if (target < 0 || target > latest) {
    throw NotFoundError("table '" + table_path + "' has no version " + std::to_string(target) + " (latest is " +
                        std::to_string(latest) + ")");
  }
  // The newest complete checkpoint at or before the target.
  std::vector<CheckpointFile> checkpoint;
  for (auto it = listing.checkpoints.rbegin(); it != listing.checkpoints.rend(); ++it) {
    if (it->first > target) continue;
    checkpoint = CompleteCheckpoint(it->second);
    if (!checkpoint.empty()) break;
  }
  int64_t start = checkpoint.empty() ? 0 : checkpoint.front().version + 1;
  for (int64_t v = start; v <= target; ++v) {
    if (listing.commits.count(v)) continue;
    if (checkpoint.empty() && v == 0 && !listing.commits.empty()) {
      throw NotFoundError("version " + std::to_string(target) + " of table '" + table_path +
                          "' cannot be rebuilt: its commits from version 0 were cleaned up and no checkpoint covers them");
    }
    throw InvalidError("table '" + table_path + "' has non-contiguous versions: commit " + std::to_string(v) +
                       " is missing between " + std::to_string(start) + " and " + std::to_string(target));
  }
  Snapshot snapshot;
  snapshot.table_path = table_path;
  snapshot.version = target;
  Replayer replayer(&snapshot);
  if (!checkpoint.empty()) {
    snapshot.checkpoint_version = checkpoint.front().version;
    ApplyCheckpoint(table_path, checkpoint, replayer);
  }
  for (int64_t v = start; v <= target; ++v) {
    ApplyJsonFile(listing.commits.at(v), "commit " + std::to_string(v), replayer);
  }
  replayer.Finish();
  if (!replayer.has_protocol) {
    throw InvalidError("table '" + table_path + "' at version " + std::to_string(target) + " has no protocol action");
  }
  if (!replayer.has_metadata) {
    throw InvalidError("table '" + table_path + "' at version " + std::to_string(target) + " has no metaData action");
  }
  CheckProtocol(snapshot);
  snapshot.schema = ParseSchema(snapshot.metadata.schema_string);
  return snapshot;
}

}  // namespace shoal::delta
