// Import of an MLflow FileStore folder (`mlruns/`): experiments (by name), runs with their ids,
// times, status, params, tags, metric histories and artifacts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "track/store.h"

namespace shoal::track {

struct ImportSummary {
  int experiments = 0;
  int runs = 0;
  int64_t metrics = 0;
  std::vector<std::string> skipped;  ///< "run <id>: <why>"
};

/// Imports `mlruns_dir` into `store`. Runs whose id exists already are skipped (listed).
ImportSummary ImportMlruns(Store& store, const std::string& mlruns_dir);

}  // namespace shoal::track
