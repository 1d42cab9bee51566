// The tracking client: one run at a time, against a Backend (the local store, or an MLflow-
// compatible server over http(s)). Metrics are batched asynchronously through a bounded queue
// (a background thread sends batches of up to 1000); params and tags are sent at once.
// Flush() returns once everything logged so far is delivered or spooled; EndRun() and the
// destructor flush.
//
// Spooling: while the server is unreachable (Error kUnavailable), writes go, in order, to a
// spool file under TrackerOptions::spool_dir (one JSON line each, fsync'd), and a background
// retry with backoff sends them once the server answers. Flush waits up to flush_timeout_s for
// that; what is still unsent then stays on disk, and the next Tracker with the same spool_dir
// sends it (delivery is at least once: a record whose reply was lost can arrive twice).
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "track/backend.h"
#include "track/store.h"

namespace shoal::track {

struct TrackerOptions {
  size_t queue_limit = 10000;   ///< metrics waiting to be sent before LogMetric blocks (backpressure)
  std::string spool_dir;        ///< empty: no spool; failures to reach the server are errors
  double flush_timeout_s = 60;  ///< how long Flush/EndRun retry an unreachable server
  double retry_max_s = 30;      ///< the longest pause between retries (backoff doubles from 0.5 s)
};

class Spool;

class Tracker {
 public:
  explicit Tracker(std::shared_ptr<Backend> backend, TrackerOptions options = {});
  /// The local store (tests, tools): no spool.
  explicit Tracker(std::shared_ptr<Store> store, size_t queue_limit = 10000);
  ~Tracker();  ///< flushes; a run still open ends FAILED (the program did not end it)

  /// Starts a run in `experiment` (created when missing). Returns its id. Needs the server.
  std::string StartRun(const std::string& experiment, const std::string& run_name = "",
                       const std::map<std::string, std::string>& tags = {});
  /// Continues run `run_id` (RUNNING again), as a resumed training job does.
  void ResumeRun(const std::string& run_id);
  const std::string& run_id() const { return run_id_; }
  Backend& backend() { return *backend_; }
  /// The active run as the backend has it (params, tags, latest metrics).
  Run GetRun();

  void LogParams(const std::map<std::string, std::string>& params);
  void SetTags(const std::map<std::string, std::string>& tags);
  /// Queued; the write happens in the background. A failed write is rethrown by the next call.
  void LogMetric(const std::string& key, double value, int64_t step, int64_t timestamp = 0);
  std::string LogArtifact(const std::string& local_path, const std::string& artifact_path = "");
  /// A new version of registered model `name` from `source`, linked to the active run.
  ModelVersion RegisterModel(const std::string& name, const std::string& source);
  void SetAlias(const std::string& name, const std::string& alias, const std::string& version);
  void Flush();
  /// FINISHED, FAILED or KILLED.
  void EndRun(const std::string& status = "FINISHED");
  /// Records waiting in the spool for the server.
  size_t spooled() const;

 private:
  struct Op;
  struct Outcome {
    std::exception_ptr error;  ///< null: sent
    std::string message;
    bool unavailable = false;  ///< the server could not be reached: a retry may help
  };
  Outcome Send(const Op& op, std::unique_lock<std::mutex>& lock);
  void Writer();
  /// `sync`: the caller waits for this write (params, tags, status), so a refusal is thrown to
  /// it with its category rather than kept for the next call.
  void Deliver(Op op, std::unique_lock<std::mutex>& lock, bool sync = false);
  bool Replay(std::unique_lock<std::mutex>& lock);
  void SendKeyValues(const std::map<std::string, std::string>& values, bool tags);
  void CheckFailure();
  void RequireRun() const;

  std::shared_ptr<Backend> backend_;
  TrackerOptions options_;
  std::string run_id_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Metric> queue_;
  size_t writing_ = 0;  // metrics taken by the writer, not yet delivered
  bool stop_ = false;
  std::string failure_;
  std::unique_ptr<Spool> spool_;
  double backoff_s_ = 0.5;
  std::thread writer_;
};

}  // namespace shoal::track
