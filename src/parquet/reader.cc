#include "parquet/reader.h"

#include <cstring>

#include "parquet/assembly.h"
#include "parquet/column_reader.h"
#include "parquet/predicate.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::parquet {

namespace {
constexpr size_t kMagicSize = 4;
constexpr size_t kFooterTailSize = 8;  // footer length + magic
}  // namespace

FileReader::FileReader(std::unique_ptr<ReadableSource> file, ReaderOptions options)
    : file_(std::move(file)), options_(options) {}

FileReader::~FileReader() = default;

const std::string& FileReader::path() const { return file_->path(); }

std::unique_ptr<FileReader> FileReader::Open(const std::string& path, ReaderOptions options) {
  return Open(std::make_unique<RandomAccessFile>(path), options);
}

std::unique_ptr<FileReader> FileReader::Open(std::unique_ptr<ReadableSource> source, ReaderOptions options) {
  std::unique_ptr<FileReader> reader(new FileReader(std::move(source), options));
  try {
    reader->ReadFooter();
  } catch (const Error& e) {
    throw WithContext(e, "reading Parquet file '" + reader->path() + "'");
  }
  return reader;
}

void FileReader::ReadFooter() {
  uint64_t size = file_->size();
  if (size < kMagicSize + kFooterTailSize) {
    throw InvalidError("not a Parquet file: " + std::to_string(size) +
                       " bytes is too short (at least 12 are needed)");
  }
  uint8_t tail[kFooterTailSize];
  file_->ReadAt(size - kFooterTailSize, kFooterTailSize, tail);
  if (std::memcmp(tail + 4, "PARE", 4) == 0) {
    throw UnsupportedError("the file is encrypted (footer magic PARE); encrypted Parquet is not supported");
  }
  if (std::memcmp(tail + 4, "PAR1", 4) != 0) {
    throw InvalidError("not a Parquet file: it does not end with the magic bytes PAR1");
  }
  uint32_t footer_length;
  std::memcpy(&footer_length, tail, 4);
  if (footer_length > size - kMagicSize - kFooterTailSize) {
    throw InvalidError("footer length " + std::to_string(footer_length) + " exceeds the " +
                       std::to_string(size - kMagicSize - kFooterTailSize) +
                       " bytes between the header and the tail");
  }
  uint8_t head[kMagicSize];
  file_->ReadAt(0, kMagicSize, head);
  if (std::memcmp(head, "PAR1", 4) != 0) {
    throw InvalidError("not a Parquet file: it does not start with the magic bytes PAR1");
  }
  std::vector<uint8_t> footer = file_->ReadAt(size - kFooterTailSize - footer_length, footer_length);
  metadata_ = ParseFileMetaData(footer.data(), footer.size());
  if (metadata_.encrypted_footer_algorithm) {
    throw UnsupportedError("the file uses Parquet modular encryption, which is not supported");
  }
  schema_ = std::make_shared<const Schema>(Schema::FromElements(metadata_.schema));
  // Check every row group against the schema once, so reads can rely on it.
  const auto& columns = schema_->columns();
  for (size_t g = 0; g < metadata_.row_groups.size(); ++g) {
    const RowGroup& group = metadata_.row_groups[g];
    if (group.num_rows < 0) {
      throw InvalidError("row group " + std::to_string(g) + " declares " +
                         std::to_string(group.num_rows) + " rows");
    }
    if (group.columns.size() != columns.size()) {
      throw InvalidError("row group " + std::to_string(g) + " has " +
                         std::to_string(group.columns.size()) + " column chunks, the schema has " +
                         std::to_string(columns.size()) + " leaf columns");
    }
    for (size_t c = 0; c < columns.size(); ++c) {
      const ColumnChunk& chunk = group.columns[c];
      if (chunk.encrypted) {
        throw UnsupportedError("column '" + columns[c].PathString() +
                               "' is encrypted; encrypted Parquet is not supported");
      }
      if (!chunk.meta_data) {
        throw InvalidError(Where(static_cast<int>(g), static_cast<int>(c)) + " has no metadata");
      }
      if (chunk.meta_data->type != columns[c].physical) {
        throw InvalidError(Where(static_cast<int>(g), static_cast<int>(c)) + " is " +
                           std::string(PhysicalTypeName(chunk.meta_data->type)) +
                           ", the schema says " + std::string(PhysicalTypeName(columns[c].physical)));
      }
    }
  }
}

std::string FileReader::Where(int row_group, int column) const {
  return "row group " + std::to_string(row_group) + " column '" +
         schema_->columns()[column].PathString() + "'";
}

std::vector<int> FileReader::ResolveFields(const std::vector<std::string>& names) const {
  std::vector<int> indices;
  if (names.empty()) {
    for (size_t i = 0; i < schema_->fields().size(); ++i) indices.push_back(static_cast<int>(i));
    return indices;
  }
  for (const std::string& name : names) {
    int index = schema_->FieldIndex(name);
    if (index < 0) {
      std::string available;
      for (const Field& f : schema_->fields()) available += (available.empty() ? "" : ", ") + f.name;
      throw NotFoundError("no column '" + name + "' in '" + path() + "' (columns: " + available + ")");
    }
    indices.push_back(index);
  }
  return indices;
}

RecordBatch FileReader::ReadRowGroup(int index, const std::vector<int>& field_indices) const {
  if (index < 0 || index >= num_row_groups()) {
    throw NotFoundError("row group " + std::to_string(index) + " does not exist in '" + path() +
                        "' (" + std::to_string(num_row_groups()) + " row groups)");
  }
  const RowGroup& group = metadata_.row_groups[index];
  RecordBatch batch;
  batch.schema = schema_;
  batch.num_rows = group.num_rows;
  batch.field_indices = field_indices.empty() ? ResolveFields({}) : field_indices;
  std::vector<LeafData> leaves(schema_->columns().size());
  ChunkReadOptions chunk_options;
  chunk_options.verify_checksums = options_.verify_checksums;
  for (int field_index : batch.field_indices) {
    const Field& field = schema_->fields().at(field_index);
    for (int c = field.first_column; c < field.first_column + field.num_columns; ++c) {
      const ColumnDescriptor& column = schema_->columns()[c];
      const ColumnMetaData& meta = *group.columns[c].meta_data;
      try {
        if (group.columns[c].file_path) {
          throw UnsupportedError("the column chunk lives in another file ('" +
                                 *group.columns[c].file_path + "')");
        }
        // The chunk starts at its dictionary page when it has one. Some writers store a
        // dictionary_page_offset of 0 to mean none.
        int64_t start = meta.data_page_offset;
        if (meta.dictionary_page_offset && *meta.dictionary_page_offset > 0 &&
            *meta.dictionary_page_offset < start) {
          start = *meta.dictionary_page_offset;
        }
        int64_t length = meta.total_compressed_size;
        uint64_t file_size = file_->size();
        if (start < 0 || length < 0 || static_cast<uint64_t>(start) > file_size ||
            static_cast<uint64_t>(length) > file_size - static_cast<uint64_t>(start)) {
          throw InvalidError("column chunk at offset " + std::to_string(start) + " of " +
                             std::to_string(length) + " bytes lies outside the file (" +
                             std::to_string(file_size) + " bytes)");
        }
        // Mapped rather than copied when large; released once decoded.
        ByteView bytes = file_->ViewAt(static_cast<uint64_t>(start), static_cast<size_t>(length));
        leaves[c] = DecodeColumnChunk(bytes.data(), bytes.size(), meta, column, group.num_rows, chunk_options);
      } catch (const Error& e) {
        throw WithContext(e, "reading '" + path() + "' " + Where(index, c));
      }
    }
    try {
      batch.columns.push_back(AssembleField(field, leaves, group.num_rows));
    } catch (const Error& e) {
      throw WithContext(e, "reading '" + path() + "' row group " + std::to_string(index));
    }
  }
  return batch;
}

std::vector<int> FileReader::SelectRowGroups(const Predicate* predicate) const {
  std::vector<int> selected;
  for (int g = 0; g < num_row_groups(); ++g) {
    if (predicate == nullptr || predicate->MayMatch([&](const std::string& name) {
          return RowGroupStatistics(*schema_, metadata_.row_groups[g], name);
        })) {
      selected.push_back(g);
    }
  }
  return selected;
}

}  // namespace shoal::parquet
