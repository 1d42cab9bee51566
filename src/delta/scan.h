// Reading the rows of a Delta snapshot as columnar batches.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "delta/snapshot.h"
#include "parquet/batch.h"

namespace shoal::parquet {
class FileReader;
class Predicate;
}  // namespace shoal::parquet

namespace shoal::delta {

struct ScanOptions {
  /// Top-level columns to read, in this order (all, in schema order, when empty).
  std::vector<std::string> columns;
  /// Rows that do not match are dropped; may be null.
  const parquet::Predicate* predicate = nullptr;
};

/// Calls `on_batch` with the rows of each row group of each data file, in path order. Batches
/// carry the table's logical column names, partition columns typed from the schema, and nulls
/// for columns a file lacks; rows deleted by deletion vectors are left out. Throws
/// NotFoundError for unknown columns or a missing data file (naming it and the version).
void ScanSnapshot(const Snapshot& snapshot, const ScanOptions& options,
                  const std::function<void(const parquet::RecordBatch&)>& on_batch);

/// The column of the table named `name`; throws NotFoundError listing the columns there are.
const DeltaField& FindColumn(const Snapshot& snapshot, const std::string& name);

/// False when the file's partition values or add.stats (min, max, null count) show that no row
/// of it matches `predicate` (file skipping).
bool FileMayMatch(const Snapshot& snapshot, const AddFile& file, const parquet::Predicate& predicate);

/// One data file of a snapshot, opened for reading row group by row group: what ScanSnapshot
/// does for each file, for callers that pick row groups themselves (the loader). Errors name the
/// file and the table version.
class DataFileReader {
 public:
  /// Opens the file and loads its deletion vector. Throws NotFoundError when the file is missing.
  DataFileReader(const Snapshot& snapshot, const AddFile& file);
  ~DataFileReader();
  DataFileReader(const DataFileReader&) = delete;
  DataFileReader& operator=(const DataFileReader&) = delete;

  int num_row_groups() const;
  int64_t num_rows(int row_group) const;
  /// Every row of the row group (deleted ones too), with `columns` of the snapshot in that order:
  /// logical names, partition values, nulls for columns the file lacks, INT96 as microseconds.
  parquet::RecordBatch ReadRowGroup(int row_group, const std::vector<const DeltaField*>& columns) const;
  /// Clears mask[i] for the rows of the row group that the deletion vector deletes. An empty
  /// mask means "all rows" and is filled with ones first, but only when a row is deleted.
  void ApplyDeletionVector(int row_group, std::vector<uint8_t>* mask) const;
  /// "data file 'PATH' of table version N", for messages.
  const std::string& where() const { return where_; }

 private:
  const Snapshot& snapshot_;
  const AddFile& file_;
  std::string where_;
  std::unique_ptr<parquet::FileReader> reader_;
  std::vector<uint64_t> deleted_;            // sorted file row indices
  std::vector<uint64_t> row_group_first_;    // file row index of each row group's first row
};

}  // namespace shoal::delta
