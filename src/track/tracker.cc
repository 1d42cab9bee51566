#include "track/tracker.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "track/mlflow_json.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::track {

namespace fs = std::filesystem;
using nlohmann::json;

// A write for the backend: a batch (metrics, params, tags) or a status change.
struct Tracker::Op {
  std::string run_id;
  std::vector<Metric> metrics;
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> tags;
  std::string status;  // not empty: a status change
  int64_t end_time = 0;

  void Send(Backend& backend) const {
    if (status.empty()) {
      backend.LogBatch(run_id, metrics, params, tags);
    } else {
      backend.UpdateRun(run_id, status, end_time);
    }
  }
  std::string ToLine() const {
    json metric_list = json::array();
    for (const Metric& m : metrics) metric_list.push_back({m.key, MetricValueJson(m.value), m.timestamp, m.step});
    json j = {{"run_id", run_id}, {"metrics", metric_list}, {"params", params}, {"tags", tags}};
    if (!status.empty()) j.update({{"status", status}, {"end_time", end_time}});
    return j.dump() + "\n";
  }
  static Op FromLine(const std::string& line) {
    const json j = json::parse(line);
    Op op;
    op.run_id = j.at("run_id").get<std::string>();
    for (const json& m : j.at("metrics")) {
      const std::optional<double> value = MetricValueFromJson(m.at(1));
      if (!value) throw InvalidError("a spooled metric value is " + m.at(1).dump());
      op.metrics.push_back({m.at(0).get<std::string>(), *value, m.at(2).get<int64_t>(), m.at(3).get<int64_t>()});
    }
    op.params = j.at("params").get<std::map<std::string, std::string>>();
    op.tags = j.at("tags").get<std::map<std::string, std::string>>();
    op.status = j.value("status", "");
    op.end_time = j.value("end_time", int64_t{0});
    return op;
  }
};

// Spool files: <dir>/<pid>-<ms>.jsonl, one record a line, each fsync'd when written; beside each,
// <file>.sent holds how many bytes of it the server has. A Tracker appends to its own file and
// also takes over files that earlier processes left (those no live process holds a lock on).
class Spool {
 public:
  explicit Spool(const std::string& dir) : dir_(dir) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw SystemError("creating tracking spool directory", dir_, ec.value());
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      if (entry.path().extension() == ".jsonl") found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    for (const fs::path& p : found) {
      File f{p.string(), ::open(p.c_str(), O_RDWR | O_CLOEXEC), 0};
      if (f.fd < 0) continue;
      if (::flock(f.fd, LOCK_EX | LOCK_NB) != 0) {  // another live tracker's
        ::close(f.fd);
        continue;
      }
      try {
        const std::vector<uint8_t> sent = ReadFile(f.path + ".sent");
        f.sent = std::stoll(std::string(sent.begin(), sent.end()));
      } catch (const std::exception&) {
        f.sent = 0;
      }
      files_.push_back(f);
      records_ += CountLines(f);
    }
  }
  ~Spool() {
    for (File& f : files_) ::close(f.fd);
  }

  bool empty() const { return records_ == 0; }
  size_t size() const { return records_; }
  const std::string& dir() const { return dir_; }

  void Append(const std::string& line) {
    if (own_ < 0) {
      const std::string path = (fs::path(dir_) / (std::to_string(::getpid()) + "-" + std::to_string(NowMillis()) + ".jsonl")).string();
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd < 0) throw SystemError("creating tracking spool file", path, errno);
      ::flock(fd, LOCK_EX | LOCK_NB);
      files_.push_back({path, fd, 0});
      own_ = fd;
    }
    const File& f = files_.back();
    WriteAll(f.fd, line, f.path);
    if (::fdatasync(f.fd) != 0) throw SystemError("syncing tracking spool file", f.path, errno);
    ++records_;
  }

  /// The oldest record not yet sent; empty when a file ends in a torn line (a crash mid-write),
  /// which is dropped.
  std::string Front() {
    File& f = files_.front();
    std::ifstream in(f.path, std::ios::binary);
    in.seekg(f.sent);
    std::string line;
    if (!std::getline(in, line) || in.eof()) {
      std::cerr << "shoal: warning: tracking spool " << f.path << " ends in an incomplete record; dropping it\n";
      Drop();
      return "";
    }
    return line;
  }

  /// Marks the front record sent (`bytes` long, with its newline).
  void Pop(size_t bytes) {
    File& f = files_.front();
    f.sent += static_cast<int64_t>(bytes);
    --records_;
    const off_t size = ::lseek(f.fd, 0, SEEK_END);
    if (f.sent >= size) {
      Drop();
    } else {
      WriteFileAtomically(f.path + ".sent", std::to_string(f.sent));
    }
  }

 private:
  struct File {
    std::string path;
    int fd;
    int64_t sent;
  };

  size_t CountLines(const File& f) const {
    std::ifstream in(f.path, std::ios::binary);
    in.seekg(f.sent);
    size_t n = 0;
    std::string line;
    while (std::getline(in, line)) {
      if (!in.eof()) ++n;  // a line without its newline is torn
    }
    return std::max<size_t>(n, 1);  // a torn tail still takes one visit to drop
  }

  void Drop() {
    File f = files_.front();
    files_.erase(files_.begin());
    if (f.fd == own_) own_ = -1;
    std::error_code ec;
    fs::remove(f.path, ec);
    fs::remove(f.path + ".sent", ec);
    ::close(f.fd);
    if (files_.empty()) records_ = 0;
  }

  std::string dir_;
  std::vector<File> files_;
  int own_ = -1;
  size_t records_ = 0;
};

Tracker::Tracker(std::shared_ptr<Backend> backend, TrackerOptions options)
    : backend_(std::move(backend)), options_(std::move(options)) {
  options_.queue_limit = std::max<size_t>(options_.queue_limit, 1);
  if (!options_.spool_dir.empty()) spool_ = std::make_unique<Spool>(options_.spool_dir);
  writer_ = std::thread([this] { Writer(); });
}

namespace {

TrackerOptions WithQueueLimit(size_t queue_limit) {
  TrackerOptions o;
  o.queue_limit = queue_limit;
  return o;
}

}  // namespace

Tracker::Tracker(std::shared_ptr<Store> store, size_t queue_limit) : Tracker(LocalBackend(std::move(store)), WithQueueLimit(queue_limit)) {}

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

// Sends `op` with the lock released around the network call.
Tracker::Outcome Tracker::Send(const Op& op, std::unique_lock<std::mutex>& lock) {
  Outcome out;
  lock.unlock();
  try {
    op.Send(*backend_);
  } catch (const Error& e) {
    out = {std::current_exception(), e.what(), e.code() == ErrorCode::kUnavailable};
  } catch (const std::exception& e) {
    out = {std::current_exception(), e.what(), false};
  }
  lock.lock();
  return out;
}

// Sends `op`, or spools it when the spool already holds older records (order) or the server is
// unreachable. Called with the lock held; unlocks around the network call.
void Tracker::Deliver(Op op, std::unique_lock<std::mutex>& lock, bool sync) {
  if (spool_ && !spool_->empty()) {
    spool_->Append(op.ToLine());
    return;
  }
  const Outcome sent = Send(op, lock);
  if (!sent.error) return;
  if (sent.unavailable && spool_) {
    if (spool_->empty()) std::cerr << "shoal: warning: " << sent.message << "; spooling to " << spool_->dir() << " and retrying\n";
    spool_->Append(op.ToLine());
    changed_.notify_all();
    return;
  }
  if (sync) std::rethrow_exception(sent.error);
  if (failure_.empty()) failure_ = "tracking (" + backend_->Describe() + "): " + sent.message;
}

// Sends spooled records, oldest first. True when the spool is empty.
bool Tracker::Replay(std::unique_lock<std::mutex>& lock) {
  while (!spool_->empty()) {
    const std::string line = spool_->Front();
    if (line.empty()) continue;  // a torn record, dropped
    Op op;
    try {
      op = Op::FromLine(line);
    } catch (const std::exception& e) {
      std::cerr << "shoal: warning: tracking spool: skipping an unreadable record: " << e.what() << "\n";
      spool_->Pop(line.size() + 1);
      continue;
    }
    const Outcome sent = Send(op, lock);
    if (sent.unavailable) return false;
    if (sent.error && failure_.empty()) failure_ = "tracking (" + backend_->Describe() + "), a spooled record: " + sent.message;
    spool_->Pop(line.size() + 1);  // sent, or refused for good
  }
  std::cerr << "shoal: tracking: the spooled records reached " << backend_->Describe() << "\n";
  return true;
}

void Tracker::Writer() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto next_retry = std::chrono::steady_clock::now();
  while (true) {
    if (!queue_.empty()) {
      Op op;
      op.run_id = run_id_;
      while (!queue_.empty() && op.metrics.size() < kMaxBatchMetrics) {
        op.metrics.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      writing_ = op.metrics.size();
      changed_.notify_all();  // room in the queue
      Deliver(std::move(op), lock);
      writing_ = 0;
      changed_.notify_all();
      continue;
    }
    if (spool_ && !spool_->empty()) {
      if (std::chrono::steady_clock::now() >= next_retry) {
        if (Replay(lock)) {
          backoff_s_ = 0.5;
        } else {
          next_retry = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(backoff_s_ * 1000));
          backoff_s_ = std::min(backoff_s_ * 2, options_.retry_max_s);
        }
        changed_.notify_all();
        continue;
      }
      if (stop_) return;  // what is left stays on disk for the next tracker
      changed_.wait_until(lock, next_retry, [&] { return stop_ || !queue_.empty(); });
      continue;
    }
    if (stop_) return;
    changed_.wait(lock, [&] { return stop_ || !queue_.empty() || (spool_ && !spool_->empty()); });
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
  std::string experiment_id = backend_->EnsureExperiment(experiment);
  RunInfo info = backend_->CreateRun(experiment_id, run_name, tags);
  std::lock_guard<std::mutex> lock(mutex_);
  run_id_ = info.run_id;
  return run_id_;
}

void Tracker::ResumeRun(const std::string& run_id) {
  if (!run_id_.empty()) throw InvalidError("tracking run '" + run_id_ + "' is still active; end it first");
  backend_->GetRun(run_id);  // it must exist there
  backend_->UpdateRun(run_id, "RUNNING", 0);
  std::lock_guard<std::mutex> lock(mutex_);
  run_id_ = run_id;
}

Run Tracker::GetRun() {
  RequireRun();
  return backend_->GetRun(run_id_);
}

void Tracker::LogParams(const std::map<std::string, std::string>& params) { SendKeyValues(params, /*tags=*/false); }

void Tracker::SetTags(const std::map<std::string, std::string>& tags) { SendKeyValues(tags, /*tags=*/true); }

// Params or tags, sent at once, in batches within MLflow's limit (100 of either a batch).
void Tracker::SendKeyValues(const std::map<std::string, std::string>& values, bool tags) {
  RequireRun();
  CheckFailure();
  std::unique_lock<std::mutex> lock(mutex_);
  Op op;
  op.run_id = run_id_;
  auto& chunk = tags ? op.tags : op.params;
  const size_t limit = tags ? kMaxBatchTags : kMaxBatchParams;
  for (const auto& kv : values) {
    chunk.insert(kv);
    if (chunk.size() == limit) {
      Deliver(op, lock, /*sync=*/true);
      chunk.clear();
    }
  }
  if (!chunk.empty()) Deliver(std::move(op), lock, /*sync=*/true);
  lock.unlock();
  CheckFailure();
}

void Tracker::LogMetric(const std::string& key, double value, int64_t step, int64_t timestamp) {
  RequireRun();
  CheckFailure();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.size() < options_.queue_limit; });
  queue_.push_back({key, value, timestamp > 0 ? timestamp : NowMillis(), step});
  changed_.notify_all();
}

std::string Tracker::LogArtifact(const std::string& local_path, const std::string& artifact_path) {
  RequireRun();
  return backend_->LogArtifact(run_id_, local_path, artifact_path);
}

ModelVersion Tracker::RegisterModel(const std::string& name, const std::string& source) {
  RequireRun();
  return backend_->CreateModelVersion(name, source, run_id_);
}

void Tracker::SetAlias(const std::string& name, const std::string& alias, const std::string& version) {
  backend_->SetAlias(name, alias, version);
}

size_t Tracker::spooled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spool_ ? spool_->size() : 0;
}

void Tracker::Flush() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return queue_.empty() && writing_ == 0; });
    if (spool_ && !spool_->empty()) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.flush_timeout_s * 1000));
      changed_.wait_until(lock, deadline, [&] { return spool_->empty() && queue_.empty() && writing_ == 0; });
      if (!spool_->empty()) {
        std::cerr << "shoal: warning: tracking server " << backend_->Describe() << " still unreachable after " << options_.flush_timeout_s
                  << " s; " << spool_->size() << " record(s) stay in " << spool_->dir()
                  << " and the next tracked run with that spool sends them\n";
      }
    }
  }
  CheckFailure();
}

void Tracker::EndRun(const std::string& status) {
  RequireRun();
  Flush();
  std::unique_lock<std::mutex> lock(mutex_);
  Op op;
  op.run_id = run_id_;
  op.status = status;
  op.end_time = NowMillis();
  run_id_.clear();
  Deliver(std::move(op), lock, /*sync=*/true);
  lock.unlock();
  CheckFailure();
}

}  // namespace shoal::track
