// A Delta table's state at one version, rebuilt from its _delta_log (PROTOCOL.md): the last
// complete checkpoint at or before the version, then the JSON commits after it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "delta/deletion_vector.h"
#include "delta/schema.h"

namespace shoal::delta {

struct Protocol {
  int32_t min_reader_version = 0;
  int32_t min_writer_version = 0;
  std::vector<std::string> reader_features;
  std::vector<std::string> writer_features;
};

struct Metadata {
  std::string id;
  std::string schema_string;
  std::vector<std::string> partition_columns;
  std::map<std::string, std::string> configuration;
  std::optional<int64_t> created_time;
};

/// A live data file.
struct AddFile {
  std::string path;  // as in the log: relative to the table and URI-encoded, or an absolute URI
  std::map<std::string, std::optional<std::string>> partition_values;
  int64_t size = 0;
  int64_t modification_time = 0;
  std::optional<std::string> stats;  // JSON: numRecords, minValues, maxValues, nullCount
  std::optional<DeletionVectorDescriptor> deletion_vector;
  std::string deletion_vector_id;  // storageType + pathOrInlineDv + offset: the reconciliation key
};

struct Snapshot {
  std::string table_path;
  int64_t version = -1;
  Protocol protocol;
  Metadata metadata;
  std::vector<DeltaField> schema;
  std::vector<AddFile> files;  // sorted by path
  std::map<std::string, int64_t> transactions;  // txn appId -> version
  std::map<std::string, int64_t> tombstones;    // removed data file path -> deletionTimestamp (ms)
  int64_t checkpoint_version = -1;  // the checkpoint the state started from, -1 for none
};

/// Loads the latest version of the table at `table_path`, or `version` when given. Throws
/// NotFoundError (not a Delta table, version does not exist or was cleaned up), InvalidError
/// (non-contiguous versions, missing protocol or metaData, corrupt log files, naming the file
/// and the version), UnsupportedError (a reader version or feature shoal lacks, named).
Snapshot LoadSnapshot(const std::string& table_path, std::optional<int64_t> version = std::nullopt);

/// The latest version whose commit was written at or before `timestamp_ms` (milliseconds since
/// the epoch; a commit's time is its file's modification time, as PROTOCOL.md defines it).
/// Throws NotFoundError when every commit is later.
int64_t VersionAtTimestamp(const std::string& table_path, int64_t timestamp_ms);

/// One commit of the table's history.
struct CommitInfo {
  int64_t version = 0;
  int64_t timestamp_ms = 0;  // commitInfo.timestamp, else the commit file's modification time
  std::string operation;     // empty when the commit has no commitInfo
  std::string operation_parameters_json = "{}";
};

/// The commits still in the log, oldest first. Throws like LoadSnapshot for a missing table.
std::vector<CommitInfo> History(const std::string& table_path);

/// The absolute path of a data file of the table (URI-decoded).
std::string DataFilePath(const Snapshot& snapshot, const AddFile& file);

/// "%XX" sequences decoded; throws InvalidError on a malformed escape.
std::string UriDecode(const std::string& text);

}  // namespace shoal::delta
