// The tracking store: experiments, runs (params, metrics, tags, artifacts) and the model
// registry, in SQLite (WAL mode) at <root>/tracking.db, with MLflow's data model and limits.
// Thread-safe: one connection, used under a mutex. No torch here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace shoal::track {

struct Experiment {
  std::string experiment_id;
  std::string name;
  std::string artifact_location;
  std::string lifecycle_stage = "active";  ///< active or deleted
  int64_t creation_time = 0;               ///< ms since the epoch
  int64_t last_update_time = 0;
  std::map<std::string, std::string> tags;
};

struct Metric {
  std::string key;
  double value = 0;
  int64_t timestamp = 0;  ///< ms since the epoch
  int64_t step = 0;
};

struct RunInfo {
  std::string run_id;
  std::string experiment_id;
  std::string run_name;
  std::string user_id;
  std::string status = "RUNNING";  ///< RUNNING, SCHEDULED, FINISHED, FAILED, KILLED
  int64_t start_time = 0;
  int64_t end_time = 0;            ///< 0 while running
  std::string artifact_uri;
  std::string lifecycle_stage = "active";
};

struct Run {
  RunInfo info;
  std::vector<Metric> metrics;  ///< the latest value of each key (highest step, then timestamp)
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> tags;
};

struct ModelVersion {
  std::string name;
  std::string version;
  int64_t creation_timestamp = 0;
  int64_t last_updated_timestamp = 0;
  std::string description;
  std::string source;  ///< where the model's files are
  std::string run_id;
  std::string status = "READY";
  std::vector<std::string> aliases;
};

struct RegisteredModel {
  std::string name;
  int64_t creation_timestamp = 0;
  int64_t last_updated_timestamp = 0;
  std::string description;
  std::vector<ModelVersion> latest_versions;
  std::map<std::string, std::string> aliases;  ///< alias -> version
};

/// MLflow's limits (its REST API documentation and validation code).
inline constexpr size_t kMaxKeyLength = 250;
inline constexpr size_t kMaxParamValueLength = 6000;
inline constexpr size_t kMaxTagValueLength = 8000;
inline constexpr size_t kMaxBatchMetrics = 1000;
inline constexpr size_t kMaxBatchParams = 100;
inline constexpr size_t kMaxBatchTags = 100;

/// Milliseconds since the epoch, now.
int64_t NowMillis();

class Store {
 public:
  /// Opens (creating when missing) the store named by `uri`: "sqlite:///abs/path.db",
  /// "sqlite://rel/path.db", or a directory, which holds tracking.db and the artifacts under
  /// artifacts/. Empty: MLFLOW_TRACKING_URI when it is a sqlite URI or a path, else ./shoal-data.
  /// Migrates the schema to the current version.
  /// `artifact_root`: where run artifacts go (default: artifacts/ beside the database).
  static std::unique_ptr<Store> Open(const std::string& uri = "", const std::string& artifact_root = "");
  ~Store();

  const std::string& path() const { return path_; }
  const std::string& artifact_root() const { return artifact_root_; }
  int schema_version() const;

  // Experiments. Errors: NotFound (no such id/name), Conflict (name taken), Invalid.
  std::string CreateExperiment(const std::string& name, const std::string& artifact_location = "",
                               const std::map<std::string, std::string>& tags = {});
  Experiment GetExperiment(const std::string& experiment_id);
  Experiment GetExperimentByName(const std::string& name);
  /// The id of the experiment called `name`, created when missing.
  std::string EnsureExperiment(const std::string& name);
  std::vector<Experiment> ListExperiments(bool include_deleted = false);
  void RenameExperiment(const std::string& experiment_id, const std::string& new_name);
  void SetExperimentLifecycle(const std::string& experiment_id, bool deleted);

  // Runs.
  RunInfo CreateRun(const std::string& experiment_id, const std::string& run_name = "", int64_t start_time = 0,
                    const std::map<std::string, std::string>& tags = {}, const std::string& user_id = "");
  /// Sets the status (and end_time when it is final) and, when not empty, the name.
  RunInfo UpdateRun(const std::string& run_id, const std::string& status, int64_t end_time = 0,
                    const std::string& run_name = "");
  Run GetRun(const std::string& run_id);
  void SetRunLifecycle(const std::string& run_id, bool deleted);
  /// Adds a run as it is, with its id, times and status (an import); Conflict when the id exists.
  void ImportRun(const RunInfo& info);
  /// Metrics, params and tags in one transaction: all are written or none. A param that exists
  /// with another value is a Conflict naming it (params are immutable); the same value is fine.
  void LogBatch(const std::string& run_id, const std::vector<Metric>& metrics,
                const std::map<std::string, std::string>& params = {}, const std::map<std::string, std::string>& tags = {});
  void DeleteTag(const std::string& run_id, const std::string& key);
  std::vector<Metric> GetMetricHistory(const std::string& run_id, const std::string& key);
  /// runs/search: the runs of the experiments (all when empty) that match `filter` (MLflow's
  /// grammar, track/search.h), ordered by `order_by` and then newest first, a page at a time.
  /// The filter and order run in SQL, so a search reads only the page's runs.
  struct RunSearch {
    std::vector<std::string> experiment_ids;
    std::string filter;
    std::vector<std::string> order_by;
    std::string view = "ACTIVE_ONLY";  ///< ACTIVE_ONLY, DELETED_ONLY or ALL
    int64_t max_results = 1000;
    int64_t offset = 0;
  };
  struct RunPage {
    std::vector<Run> runs;
    int64_t next_offset = -1;  ///< -1: no more
  };
  RunPage SearchRuns(const RunSearch& search);
  /// Copies `local_path` (a file or a directory) under the run's artifact directory, at
  /// `artifact_path` (relative; empty: its top). Returns the copied path.
  std::string LogArtifact(const std::string& run_id, const std::string& local_path, const std::string& artifact_path = "");

  // Model registry.
  RegisteredModel CreateRegisteredModel(const std::string& name, const std::string& description = "");
  RegisteredModel GetRegisteredModel(const std::string& name);
  std::vector<RegisteredModel> ListRegisteredModels();
  /// A new version of `name` (the model is created when missing), numbered from 1.
  ModelVersion CreateModelVersion(const std::string& name, const std::string& source, const std::string& run_id = "",
                                  const std::string& description = "");
  ModelVersion GetModelVersion(const std::string& name, const std::string& version);
  std::vector<ModelVersion> ListModelVersions(const std::string& name = "");
  void RenameRegisteredModel(const std::string& name, const std::string& new_name);
  void UpdateRegisteredModel(const std::string& name, const std::string& description);
  void DeleteRegisteredModel(const std::string& name);  ///< with its versions and aliases
  void UpdateModelVersion(const std::string& name, const std::string& version, const std::string& description);
  void DeleteModelVersion(const std::string& name, const std::string& version);  ///< and its aliases
  void SetAlias(const std::string& name, const std::string& alias, const std::string& version);
  void DeleteAlias(const std::string& name, const std::string& alias);
  ModelVersion GetModelVersionByAlias(const std::string& name, const std::string& alias);

 private:
  Store() = default;
  void Migrate();
  std::vector<Run> LoadRuns(const std::vector<std::string>& ids);
  std::string RunArtifactUri(const std::string& experiment_id, const std::string& run_id) const;

  std::recursive_mutex mutex_;
  sqlite3* db_ = nullptr;
  std::string path_;
  std::string artifact_root_;
};

}  // namespace shoal::track
