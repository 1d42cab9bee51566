// Writing classic Parquet checkpoints (PROTOCOL.md, "Checkpoints"): the state of one version as
// one row per action, so readers need not replay the commits before it.
#pragma once

#include <cstdint>
#include <string>

namespace shoal::delta {

struct CheckpointResult {
  int64_t version = -1;
  int64_t actions = 0;  // rows: protocol, metaData, txn, add and remove actions
  std::string path;
};

/// Writes `_delta_log/<version>.checkpoint.parquet` for `version` (the latest when negative) and
/// then `_last_checkpoint`. Both appear atomically (temporary file, fsync, rename); a failure
/// leaves the table as it was. Throws like LoadSnapshot, or IOError.
CheckpointResult WriteCheckpoint(const std::string& table_path, int64_t version = -1);

}  // namespace shoal::delta
