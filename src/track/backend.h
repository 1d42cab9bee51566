// Where a tracking client's writes go: the local store, or any server that speaks MLflow's REST
// API 2.0 (shoal server, MLflow's own, Databricks) over http(s) with an optional bearer token.
// A backend that cannot reach its server throws an Error with code kUnavailable, so the Tracker
// knows a retry can help; every other failure is the server's answer, passed on as it is.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "track/store.h"

namespace shoal::track {

class Backend {
 public:
  virtual ~Backend() = default;
  /// "sqlite:///path" or "http://host:port", for messages.
  virtual std::string Describe() const = 0;
  /// The id of the experiment called `name`, created when missing.
  virtual std::string EnsureExperiment(const std::string& name) = 0;
  virtual RunInfo CreateRun(const std::string& experiment_id, const std::string& run_name,
                            const std::map<std::string, std::string>& tags) = 0;
  /// Sets the status; a final one (FINISHED, FAILED, KILLED) sets end_time to `end_time`.
  virtual void UpdateRun(const std::string& run_id, const std::string& status, int64_t end_time) = 0;
  virtual Run GetRun(const std::string& run_id) = 0;
  virtual void LogBatch(const std::string& run_id, const std::vector<Metric>& metrics,
                        const std::map<std::string, std::string>& params,
                        const std::map<std::string, std::string>& tags) = 0;
  /// Copies a file or directory into the run's artifacts at `artifact_path`; returns its URI
  /// there (a local path, or mlflow-artifacts:/...).
  virtual std::string LogArtifact(const std::string& run_id, const std::string& local_path,
                                  const std::string& artifact_path) = 0;
  /// A new version of registered model `name` (created when missing).
  virtual ModelVersion CreateModelVersion(const std::string& name, const std::string& source, const std::string& run_id) = 0;
  virtual void SetAlias(const std::string& name, const std::string& alias, const std::string& version) = 0;
};

struct BackendOptions {
  std::string token;            ///< bearer token for http(s); empty: MLFLOW_TRACKING_TOKEN when set
  double timeout_s = 30;        ///< per request
  std::string artifact_root;    ///< the local store's artifact root (empty: beside the database)
};

/// The local store at `uri` (sqlite:///path, a directory; empty: MLFLOW_TRACKING_URI, else
/// ./shoal-data), or the server at an http:// or https:// URI.
std::shared_ptr<Backend> OpenBackend(const std::string& uri, const BackendOptions& options = {});
std::shared_ptr<Backend> LocalBackend(std::shared_ptr<Store> store);

}  // namespace shoal::track
