// Writing Parquet files from columnar batches (the same ColumnVector type the reader returns).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parquet/batch.h"
#include "parquet/metadata.h"
#include "parquet/schema.h"

namespace shoal::parquet {

/// A field of the schema to write: a primitive, a struct, a LIST (written in the three-level
/// form) or a MAP (key_value with required key).
struct WriteField {
  enum class Kind { kPrimitive, kStruct, kList, kMap };
  std::string name;
  Kind kind = Kind::kPrimitive;
  bool nullable = true;
  PhysicalType physical = PhysicalType::kInt32;
  int32_t type_length = 0;  // FIXED_LEN_BYTE_ARRAY
  LogicalType logical;
  /// Struct: its fields. List: one child, the element. Map: two children, key and value.
  std::vector<WriteField> children;

  static WriteField Primitive(std::string name, PhysicalType type, bool nullable = true,
                              LogicalType logical = {}, int32_t type_length = 0);
  static WriteField String(std::string name, bool nullable = true);
  static WriteField Struct(std::string name, std::vector<WriteField> fields, bool nullable = true);
  static WriteField List(std::string name, WriteField element, bool nullable = true);
  static WriteField Map(std::string name, WriteField key, WriteField value, bool nullable = true);
};

/// The field to write values read with `field`.
WriteField WriteFieldOf(const Field& field);

/// The fields to write data read with `schema`, so that a RecordBatch read from one file can
/// be written to another.
std::vector<WriteField> WriteFieldsOf(const Schema& schema);

/// The flat Parquet schema elements (root first) of a list of top-level fields.
std::vector<SchemaElement> ToSchemaElements(const std::vector<WriteField>& fields,
                                            const std::string& root_name = "schema");

/// Options of FileWriter, with the defaults used when a field is not set.
struct WriterOptions {
  Codec codec = Codec::kSnappy;  ///< UNCOMPRESSED, SNAPPY, GZIP, ZSTD, BROTLI or LZ4_RAW
  bool dictionary = true;        ///< dictionary-encode, falling back to PLAIN per column chunk
  int64_t dictionary_max_bytes = 1 << 20;  ///< fall back to PLAIN past this dictionary size
  int64_t row_group_max_rows = 1 << 20;
  int64_t row_group_max_bytes = 128 << 20;  ///< of buffered, uncompressed values
  int64_t page_max_bytes = 1 << 20;        ///< target size of a data page's values
  int data_page_version = 1;               ///< 1 (DATA_PAGE) or 2 (DATA_PAGE_V2)
  bool statistics = true;                  ///< min/max/null_count per column chunk
  std::vector<KeyValue> key_value_metadata;
};

/// Writes one Parquet file. Rows are buffered into row groups that are written as they fill.
/// The file appears at `path` only when Close() succeeds: until then it is written to a
/// temporary file beside it, which is removed if the writer is destroyed without Close().
/// Not thread-safe. Errors are shoal::Error.
class FileWriter {
 public:
  FileWriter(std::string path, std::vector<WriteField> fields, WriterOptions options = {});
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  /// The schema being written; batches passed to Write must have this shape.
  std::shared_ptr<const Schema> schema() const { return schema_; }

  /// Appends the rows of `batch`, whose columns are the top-level fields in order. Throws
  /// InvalidError when a column does not match its field (kind, type, buffer sizes).
  void Write(const RecordBatch& batch);
  /// Writes the last row group and the footer, then publishes the file (fsync, rename).
  void Close();

  /// Rows passed to Write so far, including those still buffered for the current row group.
  int64_t rows_written() const { return rows_written_ + buffered_rows_; }

  struct Leaf;  // the buffered levels and values of one leaf column (writer.cc)

 private:
  void FlushRowGroup();
  void WriteBytes(const std::string& bytes);

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  WriterOptions options_;
  std::vector<SchemaElement> elements_;
  std::shared_ptr<const Schema> schema_;
  std::vector<std::unique_ptr<Leaf>> leaves_;
  int64_t buffered_rows_ = 0;
  int64_t rows_written_ = 0;
  uint64_t offset_ = 0;
  std::vector<RowGroup> row_groups_;
  bool closed_ = false;
};

}  // namespace shoal::parquet
