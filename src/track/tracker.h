// The tracking client: one run at a time, metrics batched asynchronously through a bounded queue
// into a Store (a background thread writes batches of up to 1000), params and tags written at
// once. Flush() returns once everything logged so far is stored; EndRun() and the destructor
// flush. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "track/store.h"

namespace shoal::track {

class Tracker {
 public:
  /// `queue_limit`: metrics waiting to be written before LogMetric blocks (backpressure).
  explicit Tracker(std::shared_ptr<Store> store, size_t queue_limit = 10000);
  ~Tracker();  ///< flushes; a run still open ends FAILED (the program did not end it)

  /// Starts a run in `experiment` (created when missing). Returns its id.
  std::string StartRun(const std::string& experiment, const std::string& run_name = "",
                       const std::map<std::string, std::string>& tags = {});
  /// Continues run `run_id` (RUNNING again), as a resumed training job does.
  void ResumeRun(const std::string& run_id);
  const std::string& run_id() const { return run_id_; }
  Store& store() { return *store_; }

  void LogParams(const std::map<std::string, std::string>& params);
  void SetTags(const std::map<std::string, std::string>& tags);
  /// Queued; the write happens in the background. A failed write is rethrown by the next call.
  void LogMetric(const std::string& key, double value, int64_t step, int64_t timestamp = 0);
  std::string LogArtifact(const std::string& local_path, const std::string& artifact_path = "");
  void Flush();
  /// FINISHED, FAILED or KILLED.
  void EndRun(const std::string& status = "FINISHED");

 private:
  void Writer();
  void CheckFailure();
  void RequireRun() const;

  std::shared_ptr<Store> store_;
  size_t queue_limit_;
  std::string run_id_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Metric> queue_;
  size_t writing_ = 0;  // metrics taken by the writer, not yet stored
  bool stop_ = false;
  std::string failure_;
  std::thread writer_;
};

}  // namespace shoal::track
