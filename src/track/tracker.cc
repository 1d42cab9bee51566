#include "track/tracker.h"

#include <iostream>
#include <vector>

#include "util/error.h"

namespace shoal::track {

Tracker::Tracker(std::shared_ptr<Store> store, size_t queue_limit)
    : store_(std::move(store)), queue_limit_(std::max<size_t>(queue_limit, 1)), writer_([this] { Writer(); }) {}

Tracker::~Tracker() {
  try {
    if (!run_id_.empty()) EndRun("FAILED");
  } catch (const std::exception& e) {
    std::cerr << "shoal: warning: tracking: " << e.what() << "\n";
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  writer_.join();
}

void Tracker::Writer() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::string run = run_id_;
    std::vector<Metric> batch;
    while (!queue_.empty() && batch.size() < kMaxBatchMetrics) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    writing_ = batch.size();
    lock.unlock();
    changed_.notify_all();  // room in the queue
    std::string error;
    try {
      store_->LogBatch(run, batch);
    } catch (const std::exception& e) {
      error = e.what();
    }
    lock.lock();
    writing_ = 0;
    if (!error.empty() && failure_.empty()) failure_ = "writing metrics to the tracking store: " + error;
    changed_.notify_all();
  }
}

void Tracker::CheckFailure() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty()) {
    std::string f = std::move(failure_);
    failure_.clear();
    throw IOError(f);
  }
}

void Tracker::RequireRun() const {
  if (run_id_.empty()) throw InvalidError("no tracking run is active (StartRun first)");
}

std::string Tracker::StartRun(const std::string& experiment, const std::string& run_name,
                              const std::map<std::string, std::string>& tags) {
  if (!run_id_.empty()) throw InvalidError("tracking run '" + run_id_ + "' is still active; end it first");
  std::string experiment_id = store_->EnsureExperiment(experiment);
  RunInfo info = store_->CreateRun(experiment_id, run_name, 0, tags);
  std::lock_guard<std::mutex> lock(mutex_);
  run_id_ = info.run_id;
  return run_id_;
}

void Tracker::ResumeRun(const std::string& run_id) {
  if (!run_id_.empty()) throw InvalidError("tracking run '" + run_id_ + "' is still active; end it first");
  store_->UpdateRun(run_id, "RUNNING");
  std::lock_guard<std::mutex> lock(mutex_);
  run_id_ = run_id;
}

void Tracker::LogParams(const std::map<std::string, std::string>& params) {
  RequireRun();
  CheckFailure();
  std::map<std::string, std::string> chunk;
  for (const auto& kv : params) {
    chunk.insert(kv);
    if (chunk.size() == kMaxBatchParams) {
      store_->LogBatch(run_id_, {}, chunk);
      chunk.clear();
    }
  }
  if (!chunk.empty()) store_->LogBatch(run_id_, {}, chunk);
}

void Tracker::SetTags(const std::map<std::string, std::string>& tags) {
  RequireRun();
  CheckFailure();
  store_->LogBatch(run_id_, {}, {}, tags);
}

void Tracker::LogMetric(const std::string& key, double value, int64_t step, int64_t timestamp) {
  RequireRun();
  CheckFailure();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.size() < queue_limit_; });
  queue_.push_back({key, value, timestamp > 0 ? timestamp : NowMillis(), step});
  changed_.notify_all();
}

std::string Tracker::LogArtifact(const std::string& local_path, const std::string& artifact_path) {
  RequireRun();
  return store_->LogArtifact(run_id_, local_path, artifact_path);
}

void Tracker::Flush() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return queue_.empty() && writing_ == 0; });
  }
  CheckFailure();
}

void Tracker::EndRun(const std::string& status) {
  RequireRun();
  std::string run = run_id_;
  Flush();
  store_->UpdateRun(run, status);
  std::lock_guard<std::mutex> lock(mutex_);
  run_id_.clear();
}

}  // namespace shoal::track
