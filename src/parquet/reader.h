// Reading Parquet files: footer, schema, and row groups into columnar batches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parquet/batch.h"
#include "parquet/metadata.h"
#include "parquet/schema.h"

namespace shoal {
class ReadableSource;
}

namespace shoal::parquet {

class Predicate;

/// Options of FileReader; the defaults suit reading untrusted files.
struct ReaderOptions {
  /// Check page CRCs where the writer stored them; a mismatch is an error naming the page.
  bool verify_checksums = true;
};

/// A Parquet file opened for reading. Opening reads and checks the footer; row groups are read
/// on demand, one at a time, so memory stays near one row group's decoded size. ReadRowGroup is
/// const and may be called from several threads at once. Errors are shoal::Error naming the
/// file, and where it applies the row group, column and page.
class FileReader {
 public:
  /// Opens `path`. Throws NotFoundError, IOError, InvalidError (not Parquet, corrupt footer) or
  /// UnsupportedError (encrypted).
  static std::unique_ptr<FileReader> Open(const std::string& path, ReaderOptions options = {});
  /// Reads from any source, e.g. a file already in memory.
  static std::unique_ptr<FileReader> Open(std::unique_ptr<ReadableSource> source, ReaderOptions options = {});
  ~FileReader();

  const std::string& path() const;
  const FileMetaData& metadata() const { return metadata_; }
  const Schema& schema() const { return *schema_; }
  std::shared_ptr<const Schema> shared_schema() const { return schema_; }
  int num_row_groups() const { return static_cast<int>(metadata_.row_groups.size()); }
  int64_t num_rows() const { return metadata_.num_rows; }

  /// Indices of the top-level fields named in `names`, in that order; all fields when empty.
  /// Throws NotFoundError naming a column that does not exist.
  std::vector<int> ResolveFields(const std::vector<std::string>& names) const;

  /// Reads row group `index`, the top-level fields `field_indices` (all when empty).
  RecordBatch ReadRowGroup(int index, const std::vector<int>& field_indices = {}) const;

  /// Row groups whose statistics do not rule out `predicate` (all when it is null).
  std::vector<int> SelectRowGroups(const Predicate* predicate) const;

 private:
  FileReader(std::unique_ptr<ReadableSource> file, ReaderOptions options);
  void ReadFooter();
  std::string Where(int row_group, int column) const;

  std::unique_ptr<ReadableSource> file_;
  ReaderOptions options_;
  FileMetaData metadata_;
  std::shared_ptr<const Schema> schema_;
};

}  // namespace shoal::parquet
