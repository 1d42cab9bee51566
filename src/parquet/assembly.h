// Record assembly: turns the levels and values of leaf columns into nested ColumnVectors.
// Internal to the reader.
#pragma once

#include <vector>

#include "parquet/batch.h"
#include "parquet/column_reader.h"

namespace shoal::parquet {

/// Builds the column of top-level `field` from its leaves; `leaves` is indexed by column index
/// and holds every leaf under `field`. Leaves are consumed (their buffers are moved out).
/// Throws InvalidError when the leaves disagree on the number of rows they describe.
ColumnVector AssembleField(const Field& field, std::vector<LeafData>& leaves, int64_t num_rows);

}  // namespace shoal::parquet
