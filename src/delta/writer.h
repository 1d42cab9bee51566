// Writing Delta tables: create with the schema of the data, and append, each in one atomic
// commit (PROTOCOL.md). Tables shoal creates use protocol (1, 2).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <vector>

#include "parquet/batch.h"
#include "parquet/writer.h"

namespace shoal::delta {

struct AppendOptions {
  /// Partition columns, on creation (top-level primitive columns). Appends to an existing table
  /// use its own partition columns.
  std::vector<std::string> partition_columns;
  /// Table properties, on creation (metaData.configuration).
  std::map<std::string, std::string> configuration;
  /// Exactly-once: with an app id, a version at or below the table's txn version for that app
  /// is not appended again (the commit is skipped and reported).
  std::string app_id;
  int64_t app_version = -1;
  parquet::WriterOptions parquet;
  /// Replace the table's rows: the commit removes every live file and adds the new ones.
  bool overwrite = false;
  /// Start a new data file once a file holds this many rows (checked between batches); 0: one file.
  int64_t rows_per_file = 0;
  /// Write a checkpoint after every commit whose version is a multiple of this (0: never).
  int64_t checkpoint_interval = 10;
  /// Attempts at publishing the commit when other writers win the race.
  int max_attempts = 1000;
};

struct AppendResult {
  int64_t version = -1;  // the commit's version; for a skipped duplicate, the table's version
  int64_t files = 0;
  int64_t rows = 0;
  bool created = false;
  bool duplicate = false;  // an earlier commit already carried this app id and version
  bool checkpointed = false;     // the commit's version got a checkpoint (every 10th)
  std::string checkpoint_error;  // why that checkpoint failed; the commit stands regardless
};

struct VacuumResult {
  std::vector<std::string> deleted;  // paths relative to the table
  int64_t kept_for_retention = 0;    // unreferenced files still inside the retention period
};

/// Deletes the data files of `table_path` that the latest version does not reference and that
/// left the table (their remove's deletionTimestamp, or for files never committed their
/// modification time) more than `retain_hours` ago. Time travel to versions that used them stops
/// working. The log, hidden files and files of live deletion vectors are never touched. With
/// dry_run, lists what it would delete.
VacuumResult Vacuum(const std::string& table_path, double retain_hours = 168, bool dry_run = false);

/// The Delta schemaString of data written with `schema` (top-level fields in order).
/// Throws UnsupportedError for Parquet types Delta has no type for (unsigned 64-bit, ...).
std::string DeltaSchemaString(const parquet::Schema& schema);

/// Appends `batches` (all of `schema`) to the table at `table_path` as data files (one, or one
/// per `rows_per_file` rows) and one commit, creating the table when it does not exist, which is safe when several processes race
/// to create it. The data file is written first; the commit is published with link(), which
/// never replaces an existing commit; on losing the race to a blind append, it retries at the
/// next version. A concurrent change of schema or protocol, or data whose schema differs from
/// the table's, is a ConflictError/InvalidError, and the data file is removed: a failed append
/// leaves the table as it was.
AppendResult AppendToTable(const std::string& table_path, const parquet::Schema& schema,
                           const std::vector<parquet::RecordBatch>& batches, const AppendOptions& options = {});

/// The same, pulling batches one at a time: `next` fills its argument and returns true, or
/// returns false at the end. Memory stays near one batch.
using BatchSource = std::function<bool(parquet::RecordBatch*)>;
AppendResult AppendToTable(const std::string& table_path, const parquet::Schema& schema, const BatchSource& next,
                           const AppendOptions& options = {});

}  // namespace shoal::delta
