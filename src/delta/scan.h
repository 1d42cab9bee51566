// Reading the rows of a Delta snapshot as columnar batches.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "delta/snapshot.h"
#include "parquet/batch.h"

namespace shoal::parquet {
class Predicate;
}

namespace shoal::delta {

struct ScanOptions {
  /// Top-level columns to read, in this order (all, in schema order, when empty).
  std::vector<std::string> columns;
  /// Rows that do not match are dropped; may be null.
  const parquet::Predicate* predicate = nullptr;
};

/// Calls `on_batch` with the rows of each row group of each data file, in path order. Batches
/// carry the table's logical column names, partition columns typed from the schema, and nulls
/// for columns a file lacks. Throws NotFoundError for unknown columns or a missing data file
/// (naming it and the version), UnsupportedError for deletion vectors.
void ScanSnapshot(const Snapshot& snapshot, const ScanOptions& options,
                  const std::function<void(const parquet::RecordBatch&)>& on_batch);

}  // namespace shoal::delta
