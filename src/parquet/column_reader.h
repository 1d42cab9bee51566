// Decoding one column chunk: its pages, levels and values. Internal to the reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parquet/encoding.h"
#include "parquet/metadata.h"
#include "parquet/schema.h"

namespace shoal::parquet {

/// The levels and dense non-null values of one column chunk.
struct LeafData {
  int64_t num_levels = 0;
  UninitVector<int16_t> definition_levels;  // empty when max_definition_level == 0
  UninitVector<int16_t> repetition_levels;  // empty when max_repetition_level == 0
  ValueBuffer values;
};

struct ChunkReadOptions {
  bool verify_checksums = true;
};

/// Decodes the pages of a column chunk from `data` (the chunk's bytes, starting at its first
/// page) of a row group of `num_rows` rows. Throws shoal::Error naming the page and what is wrong; the caller adds file, row
/// group and column.
LeafData DecodeColumnChunk(const uint8_t* data, size_t size, const ColumnMetaData& meta,
                           const ColumnDescriptor& column, int64_t num_rows,
                           const ChunkReadOptions& options);

}  // namespace shoal::parquet
