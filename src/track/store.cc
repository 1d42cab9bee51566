#include "track/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "track/search.h"
#include "util/error.h"

namespace shoal::track {

namespace fs = std::filesystem;

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

// Each entry moves the schema one version up; PRAGMA user_version holds the version reached.
const char* const kMigrations[] = {
    // 1: experiments, runs, params, metrics (with their latest values), tags, the model registry.
    R"sql(
CREATE TABLE experiments (
  experiment_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  artifact_location TEXT NOT NULL,
  lifecycle_stage TEXT NOT NULL DEFAULT 'active',
  creation_time INTEGER NOT NULL,
  last_update_time INTEGER NOT NULL);
CREATE TABLE experiment_tags (
  experiment_id INTEGER NOT NULL REFERENCES experiments(experiment_id),
  key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (experiment_id, key));
CREATE TABLE runs (
  run_uuid TEXT PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(experiment_id),
  name TEXT NOT NULL, user_id TEXT NOT NULL, status TEXT NOT NULL,
  start_time INTEGER NOT NULL, end_time INTEGER NOT NULL,
  artifact_uri TEXT NOT NULL, lifecycle_stage TEXT NOT NULL DEFAULT 'active');
CREATE INDEX runs_by_experiment ON runs (experiment_id, start_time);
CREATE TABLE params (run_uuid TEXT NOT NULL REFERENCES runs(run_uuid), key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (run_uuid, key));
CREATE TABLE tags (run_uuid TEXT NOT NULL REFERENCES runs(run_uuid), key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (run_uuid, key));
CREATE TABLE metrics (run_uuid TEXT NOT NULL REFERENCES runs(run_uuid), key TEXT NOT NULL, value REAL NOT NULL,
  is_nan INTEGER NOT NULL, timestamp INTEGER NOT NULL, step INTEGER NOT NULL);
CREATE INDEX metrics_by_run_key_step ON metrics (run_uuid, key, step);
CREATE TABLE latest_metrics (run_uuid TEXT NOT NULL REFERENCES runs(run_uuid), key TEXT NOT NULL,
  value REAL NOT NULL, is_nan INTEGER NOT NULL, timestamp INTEGER NOT NULL, step INTEGER NOT NULL,
  PRIMARY KEY (run_uuid, key));
CREATE TABLE registered_models (name TEXT PRIMARY KEY, creation_time INTEGER NOT NULL,
  last_updated_time INTEGER NOT NULL, description TEXT NOT NULL);
CREATE TABLE model_versions (name TEXT NOT NULL REFERENCES registered_models(name), version INTEGER NOT NULL,
  creation_time INTEGER NOT NULL, last_updated_time INTEGER NOT NULL, description TEXT NOT NULL,
  source TEXT NOT NULL, run_id TEXT NOT NULL, status TEXT NOT NULL, PRIMARY KEY (name, version));
CREATE TABLE model_aliases (name TEXT NOT NULL REFERENCES registered_models(name), alias TEXT NOT NULL,
  version INTEGER NOT NULL, PRIMARY KEY (name, alias));
)sql",
    // 2: params, tags and latest_metrics clustered by (run, key), so reading a page of runs for
    // runs/search is one B-tree walk per run and table, not an index probe and a row fetch per key;
    // the metric history clustered by (run, key, step, timestamp, value, is_nan), MLflow's key
    // for a point, so a point is written once (no separate index) and a repeated one is dropped.
    R"sql(
CREATE TABLE metrics2 (run_uuid TEXT NOT NULL REFERENCES runs(run_uuid), key TEXT NOT NULL, value REAL NOT NULL,
  is_nan INTEGER NOT NULL, timestamp INTEGER NOT NULL, step INTEGER NOT NULL,
  PRIMARY KEY (run_uuid, key, step, timestamp, value, is_nan)) WITHOUT ROWID;
INSERT OR IGNORE INTO metrics2 SELECT run_uuid, key, value, is_nan, timestamp, step FROM metrics;
DROP TABLE metrics;
ALTER TABLE metrics2 RENAME TO metrics;
CREATE TABLE params2 (run_uuid TEXT NOT NULL REFERENCES runs(run_uuid), key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (run_uuid, key)) WITHOUT ROWID;
INSERT INTO params2 SELECT run_uuid, key, value FROM params;
DROP TABLE params;
ALTER TABLE params2 RENAME TO params;
CREATE TABLE tags2 (run_uuid TEXT NOT NULL REFERENCES runs(run_uuid), key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (run_uuid, key)) WITHOUT ROWID;
INSERT INTO tags2 SELECT run_uuid, key, value FROM tags;
DROP TABLE tags;
ALTER TABLE tags2 RENAME TO tags;
CREATE TABLE latest_metrics2 (run_uuid TEXT NOT NULL REFERENCES runs(run_uuid), key TEXT NOT NULL,
  value REAL NOT NULL, is_nan INTEGER NOT NULL, timestamp INTEGER NOT NULL, step INTEGER NOT NULL,
  PRIMARY KEY (run_uuid, key)) WITHOUT ROWID;
INSERT INTO latest_metrics2 SELECT run_uuid, key, value, is_nan, timestamp, step FROM latest_metrics;
DROP TABLE latest_metrics;
ALTER TABLE latest_metrics2 RENAME TO latest_metrics;
)sql",
};

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
      throw IOError(std::string("tracking store: preparing '") + sql.substr(0, 60) + "': " + sqlite3_errmsg(db));
    }
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  /// True while there is a row.
  bool Step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    if (rc == SQLITE_CONSTRAINT) throw ConflictError(std::string("tracking store: ") + sqlite3_errmsg(db_));
    throw IOError(std::string("tracking store: ") + sqlite3_errmsg(db_));
  }
  void Run() {
    while (Step()) {
    }
  }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string Text(int i) {
    const unsigned char* t = sqlite3_column_text(stmt_, i);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, i))) : "";
  }
  int64_t Int(int i) { return sqlite3_column_int64(stmt_, i); }
  double Real(int i) { return sqlite3_column_double(stmt_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw IOError("tracking store: " + message);
  }
}

// BEGIN IMMEDIATE ... COMMIT, rolled back when the scope ends by an exception.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { Exec(db_, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void Commit() {
    Exec(db_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

std::string NewRunId() {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id(32, '0');
  for (char& c : id) c = hex[random() & 15];
  return id;
}

void CheckKey(const std::string& what, const std::string& key) {
  if (key.empty()) throw InvalidError(what + " name must not be empty");
  if (key.size() > kMaxKeyLength) {
    throw InvalidError(what + " '" + key.substr(0, 40) + "...' is " + std::to_string(key.size()) + " characters long; the limit is " +
                       std::to_string(kMaxKeyLength));
  }
  // MLflow's rule: alphanumerics, underscores, dashes, periods, spaces and slashes; no '..' path parts.
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ' ' || c == '/')) {
      throw InvalidError(what + " name '" + key + "' may only hold letters, digits, '_', '-', '.', ' ' and '/'");
    }
  }
  if (key.front() == '/' || key == ".." || key.find("../") != std::string::npos || key.find("/..") != std::string::npos) {
    throw InvalidError(what + " name '" + key + "' is not a relative path");
  }
}

void CheckValue(const std::string& what, const std::string& key, const std::string& value, size_t limit) {
  if (value.size() > limit) {
    throw InvalidError(what + " '" + key + "' has a value of " + std::to_string(value.size()) + " characters; the limit is " +
                       std::to_string(limit));
  }
}

// A path under the artifact root: relative, without '..' parts.
fs::path Confined(const std::string& artifact_path) {
  fs::path p(artifact_path);
  if (p.is_absolute()) throw InvalidError("artifact path '" + artifact_path + "' must be relative");
  for (const auto& part : p) {
    if (part == "..") throw InvalidError("artifact path '" + artifact_path + "' must not leave the run's artifacts ('..')");
  }
  return p;
}

}  // namespace

std::unique_ptr<Store> Store::Open(const std::string& uri_in, const std::string& artifact_root) {
  std::string uri = uri_in;
  if (uri.empty()) {
    const char* env = std::getenv("MLFLOW_TRACKING_URI");
    uri = env && *env ? env : "./shoal-data";
  }
  std::string path;
  if (uri.rfind("sqlite:///", 0) == 0) {
    path = uri.substr(9);  // keeps the leading '/'
  } else if (uri.rfind("sqlite://", 0) == 0) {
    path = uri.substr(9);
  } else if (uri.find("://") != std::string::npos) {
    throw UnsupportedError("tracking store '" + uri + "': the local store takes sqlite:///PATH or a directory; "
                           "an http(s) server is reached through the tracking client (track::OpenBackend), not the store");
  } else {
    path = (fs::path(uri) / "tracking.db").string();
  }
  if (path.empty()) throw InvalidError("tracking store '" + uri + "' names no file");
  std::unique_ptr<Store> store(new Store());
  store->path_ = path;
  store->artifact_root_ = (artifact_root.empty() ? fs::absolute(fs::path(path)).parent_path() / "artifacts"
                                                : fs::absolute(artifact_root))
                              .lexically_normal()
                              .string();
  std::error_code ec;
  fs::create_directories(fs::absolute(fs::path(path)).parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &store->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string message = store->db_ ? sqlite3_errmsg(store->db_) : "out of memory";
    throw IOError("opening tracking store '" + path + "': " + message);
  }
  sqlite3_busy_timeout(store->db_, 10'000);
  try {
    // A 64 MiB page cache and reads through mmap keep searches over many runs off read(2).
    Exec(store->db_, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                     "PRAGMA cache_size=-65536; PRAGMA mmap_size=268435456; PRAGMA temp_store=MEMORY;");
    store->Migrate();
  } catch (const Error& e) {
    throw WithContext(e, "opening tracking store '" + path + "'");
  }
  return store;
}

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

int Store::schema_version() const {
  Stmt s(db_, "PRAGMA user_version");
  s.Step();
  return static_cast<int>(s.Int(0));
}

void Store::Migrate() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Transaction t(db_);
  const int known = static_cast<int>(std::size(kMigrations));
  const int at = schema_version();
  if (at > known) {
    throw UnsupportedError("the store's schema is version " + std::to_string(at) + ", newer than this shoal's (" +
                           std::to_string(known) + ")");
  }
  for (int v = at; v < known; ++v) Exec(db_, kMigrations[v]);
  if (at == 0) {
    // MLflow's default experiment, id 0.
    const int64_t now = NowMillis();
    Stmt s(db_, "INSERT INTO experiments VALUES (0, 'Default', ?, 'active', ?, ?)");
    s.Bind(1, (fs::path(artifact_root_) / "0").string()).Bind(2, now).Bind(3, now).Run();
  }
  Exec(db_, "PRAGMA user_version = " + std::to_string(known));
  t.Commit();
}

// ---- experiments ----

std::string Store::CreateExperiment(const std::string& name, const std::string& artifact_location,
                                    const std::map<std::string, std::string>& tags) {
  if (name.empty()) throw InvalidError("an experiment needs a name");
  if (name.size() > 500) throw InvalidError("experiment name is longer than 500 characters");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Transaction t(db_);
  {
    Stmt exists(db_, "SELECT 1 FROM experiments WHERE name = ?");
    if (exists.Bind(1, name).Step()) throw ConflictError("experiment '" + name + "' exists already");
  }
  Stmt next(db_, "SELECT COALESCE(MAX(experiment_id), 0) + 1 FROM experiments");
  next.Step();
  const int64_t id = next.Int(0);
  const int64_t now = NowMillis();
  std::string location = artifact_location.empty() ? (fs::path(artifact_root_) / std::to_string(id)).string() : artifact_location;
  Stmt s(db_, "INSERT INTO experiments VALUES (?, ?, ?, 'active', ?, ?)");
  s.Bind(1, id).Bind(2, name).Bind(3, location).Bind(4, now).Bind(5, now).Run();
  for (const auto& [k, v] : tags) {
    CheckKey("tag", k);
    CheckValue("tag", k, v, kMaxTagValueLength);
    Stmt tag(db_, "INSERT INTO experiment_tags VALUES (?, ?, ?)");
    tag.Bind(1, id).Bind(2, k).Bind(3, v).Run();
  }
  t.Commit();
  return std::to_string(id);
}

namespace {

Experiment ReadExperiment(sqlite3* db, Stmt& s) {
  Experiment e;
  e.experiment_id = std::to_string(s.Int(0));
  e.name = s.Text(1);
  e.artifact_location = s.Text(2);
  e.lifecycle_stage = s.Text(3);
  e.creation_time = s.Int(4);
  e.last_update_time = s.Int(5);
  Stmt tags(db, "SELECT key, value FROM experiment_tags WHERE experiment_id = ?");
  tags.Bind(1, s.Int(0));
  while (tags.Step()) e.tags[tags.Text(0)] = tags.Text(1);
  return e;
}

int64_t ParseId(const std::string& what, const std::string& id) {
  try {
    size_t used = 0;
    long long v = std::stoll(id, &used);
    if (used == id.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw NotFoundError(what + " '" + id + "' does not exist (ids are whole numbers)");
}

}  // namespace

Experiment Store::GetExperiment(const std::string& experiment_id) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, "SELECT * FROM experiments WHERE experiment_id = ?");
  if (!s.Bind(1, ParseId("experiment", experiment_id)).Step()) {
    throw NotFoundError("experiment '" + experiment_id + "' does not exist");
  }
  return ReadExperiment(db_, s);
}

Experiment Store::GetExperimentByName(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, "SELECT * FROM experiments WHERE name = ?");
  if (!s.Bind(1, name).Step()) throw NotFoundError("experiment '" + name + "' does not exist");
  return ReadExperiment(db_, s);
}

std::string Store::EnsureExperiment(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, "SELECT experiment_id FROM experiments WHERE name = ?");
  if (s.Bind(1, name).Step()) return std::to_string(s.Int(0));
  return CreateExperiment(name);
}

std::vector<Experiment> Store::ListExperiments(bool include_deleted) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, std::string("SELECT * FROM experiments") + (include_deleted ? "" : " WHERE lifecycle_stage = 'active'") +
                  " ORDER BY experiment_id");
  std::vector<Experiment> out;
  while (s.Step()) out.push_back(ReadExperiment(db_, s));
  return out;
}

void Store::RenameExperiment(const std::string& experiment_id, const std::string& new_name) {
  if (new_name.empty()) throw InvalidError("an experiment needs a name");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetExperiment(experiment_id);
  Stmt exists(db_, "SELECT 1 FROM experiments WHERE name = ?");
  if (exists.Bind(1, new_name).Step()) throw ConflictError("experiment '" + new_name + "' exists already");
  Stmt s(db_, "UPDATE experiments SET name = ?, last_update_time = ? WHERE experiment_id = ?");
  s.Bind(1, new_name).Bind(2, NowMillis()).Bind(3, ParseId("experiment", experiment_id)).Run();
}

void Store::SetExperimentLifecycle(const std::string& experiment_id, bool deleted) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetExperiment(experiment_id);
  if (experiment_id == "0" && deleted) throw InvalidError("the default experiment (0) cannot be deleted");
  Stmt s(db_, "UPDATE experiments SET lifecycle_stage = ?, last_update_time = ? WHERE experiment_id = ?");
  s.Bind(1, std::string(deleted ? "deleted" : "active")).Bind(2, NowMillis()).Bind(3, ParseId("experiment", experiment_id)).Run();
}

// ---- runs ----

std::string Store::RunArtifactUri(const std::string& experiment_id, const std::string& run_id) const {
  return (fs::path(artifact_root_) / experiment_id / run_id / "artifacts").string();
}

RunInfo Store::CreateRun(const std::string& experiment_id, const std::string& run_name, int64_t start_time,
                         const std::map<std::string, std::string>& tags, const std::string& user_id) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Experiment e = GetExperiment(experiment_id);
  if (e.lifecycle_stage != "active") throw InvalidError("experiment '" + experiment_id + "' is deleted; restore it to add runs");
  RunInfo r;
  r.run_id = NewRunId();
  r.experiment_id = experiment_id;
  r.run_name = run_name.empty() ? "run-" + r.run_id.substr(0, 8) : run_name;
  r.user_id = user_id;
  r.start_time = start_time > 0 ? start_time : NowMillis();
  r.artifact_uri = RunArtifactUri(experiment_id, r.run_id);
  Transaction t(db_);
  Stmt s(db_, "INSERT INTO runs VALUES (?, ?, ?, ?, 'RUNNING', ?, 0, ?, 'active')");
  s.Bind(1, r.run_id).Bind(2, ParseId("experiment", experiment_id)).Bind(3, r.run_name).Bind(4, r.user_id)
      .Bind(5, r.start_time).Bind(6, r.artifact_uri).Run();
  std::map<std::string, std::string> all = tags;
  all["mlflow.runName"] = r.run_name;
  if (!user_id.empty()) all["mlflow.user"] = user_id;
  t.Commit();
  LogBatch(r.run_id, {}, {}, all);
  return r;
}

namespace {

const char* const kStatuses[] = {"RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED"};

RunInfo ReadRunInfo(Stmt& s) {
  RunInfo r;
  r.run_id = s.Text(0);
  r.experiment_id = std::to_string(s.Int(1));
  r.run_name = s.Text(2);
  r.user_id = s.Text(3);
  r.status = s.Text(4);
  r.start_time = s.Int(5);
  r.end_time = s.Int(6);
  r.artifact_uri = s.Text(7);
  r.lifecycle_stage = s.Text(8);
  return r;
}

}  // namespace

RunInfo Store::UpdateRun(const std::string& run_id, const std::string& status, int64_t end_time, const std::string& run_name) {
  bool known = false;
  for (const char* s : kStatuses) known = known || status == s;
  if (!known) throw InvalidError("run status '" + status + "' is not one of RUNNING, SCHEDULED, FINISHED, FAILED, KILLED");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  RunInfo r = GetRun(run_id).info;
  r.status = status;
  if (status == "FINISHED" || status == "FAILED" || status == "KILLED") r.end_time = end_time > 0 ? end_time : NowMillis();
  if (!run_name.empty()) r.run_name = run_name;
  Stmt s(db_, "UPDATE runs SET status = ?, end_time = ?, name = ? WHERE run_uuid = ?");
  s.Bind(1, r.status).Bind(2, r.end_time).Bind(3, r.run_name).Bind(4, run_id).Run();
  if (!run_name.empty()) LogBatch(run_id, {}, {}, {{"mlflow.runName", run_name}});
  return r;
}

Run Store::GetRun(const std::string& run_id) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Run run;
  {
    Stmt s(db_, "SELECT * FROM runs WHERE run_uuid = ?");
    if (!s.Bind(1, run_id).Step()) throw NotFoundError("run '" + run_id + "' does not exist");
    run.info = ReadRunInfo(s);
  }
  Stmt m(db_, "SELECT key, value, is_nan, timestamp, step FROM latest_metrics WHERE run_uuid = ? ORDER BY key");
  m.Bind(1, run_id);
  while (m.Step()) run.metrics.push_back({m.Text(0), m.Int(2) ? NAN : m.Real(1), m.Int(3), m.Int(4)});
  Stmt p(db_, "SELECT key, value FROM params WHERE run_uuid = ?");
  p.Bind(1, run_id);
  while (p.Step()) run.params[p.Text(0)] = p.Text(1);
  Stmt t(db_, "SELECT key, value FROM tags WHERE run_uuid = ?");
  t.Bind(1, run_id);
  while (t.Step()) run.tags[t.Text(0)] = t.Text(1);
  return run;
}

void Store::ImportRun(const RunInfo& info) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetExperiment(info.experiment_id);
  {
    Stmt exists(db_, "SELECT 1 FROM runs WHERE run_uuid = ?");
    if (exists.Bind(1, info.run_id).Step()) throw ConflictError("run '" + info.run_id + "' exists already");
  }
  bool known = false;
  for (const char* s : kStatuses) known = known || info.status == s;
  if (!known) throw InvalidError("run '" + info.run_id + "': unknown status '" + info.status + "'");
  if (info.run_id.empty() || info.run_id.find_first_of("/\\.") != std::string::npos) throw InvalidError("run id '" + info.run_id + "' is not an id");
  Stmt s(db_, "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.Bind(1, info.run_id).Bind(2, ParseId("experiment", info.experiment_id)).Bind(3, info.run_name).Bind(4, info.user_id)
      .Bind(5, info.status).Bind(6, info.start_time).Bind(7, info.end_time).Bind(8, RunArtifactUri(info.experiment_id, info.run_id))
      .Bind(9, std::string("active")).Run();  // the importer deletes it once its data is in
}

void Store::SetRunLifecycle(const std::string& run_id, bool deleted) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetRun(run_id);
  Stmt s(db_, "UPDATE runs SET lifecycle_stage = ? WHERE run_uuid = ?");
  s.Bind(1, std::string(deleted ? "deleted" : "active")).Bind(2, run_id).Run();
}

void Store::LogBatch(const std::string& run_id, const std::vector<Metric>& metrics,
                     const std::map<std::string, std::string>& params, const std::map<std::string, std::string>& tags) {
  if (metrics.size() > kMaxBatchMetrics || params.size() > kMaxBatchParams || tags.size() > kMaxBatchTags) {
    throw InvalidError("a batch holds at most " + std::to_string(kMaxBatchMetrics) + " metrics, " +
                       std::to_string(kMaxBatchParams) + " params and " + std::to_string(kMaxBatchTags) + " tags; this one has " +
                       std::to_string(metrics.size()) + ", " + std::to_string(params.size()) + " and " +
                       std::to_string(tags.size()));
  }
  for (const Metric& m : metrics) CheckKey("metric", m.key);
  for (const auto& [k, v] : params) {
    CheckKey("param", k);
    CheckValue("param", k, v, kMaxParamValueLength);
  }
  for (const auto& [k, v] : tags) {
    CheckKey("tag", k);
    CheckValue("tag", k, v, kMaxTagValueLength);
  }
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Transaction t(db_);
  {
    Stmt run(db_, "SELECT lifecycle_stage FROM runs WHERE run_uuid = ?");
    if (!run.Bind(1, run_id).Step()) throw NotFoundError("run '" + run_id + "' does not exist");
    if (run.Text(0) != "active") throw InvalidError("run '" + run_id + "' is deleted; restore it to log to it");
  }
  for (const auto& [k, v] : params) {
    Stmt old(db_, "SELECT value FROM params WHERE run_uuid = ? AND key = ?");
    if (old.Bind(1, run_id).Bind(2, k).Step()) {
      if (old.Text(0) != v) {
        throw InvalidError("param '" + k + "' of run '" + run_id + "' is '" + old.Text(0) + "' already; params cannot change (new value '" +
                           v + "')");
      }
      continue;
    }
    Stmt s(db_, "INSERT INTO params VALUES (?, ?, ?)");
    s.Bind(1, run_id).Bind(2, k).Bind(3, v).Run();
  }
  for (const auto& [k, v] : tags) {
    Stmt s(db_, "INSERT INTO tags VALUES (?, ?, ?) ON CONFLICT (run_uuid, key) DO UPDATE SET value = excluded.value");
    s.Bind(1, run_id).Bind(2, k).Bind(3, v).Run();
  }
  if (!metrics.empty()) {
    Stmt history(db_, "INSERT OR IGNORE INTO metrics VALUES (?, ?, ?, ?, ?, ?)");  // a point logged again is one point
    Stmt latest(db_,
                "INSERT INTO latest_metrics VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_uuid, key) DO UPDATE SET "
                "value = excluded.value, is_nan = excluded.is_nan, timestamp = excluded.timestamp, step = excluded.step "
                "WHERE excluded.step > latest_metrics.step OR "
                "(excluded.step = latest_metrics.step AND excluded.timestamp >= latest_metrics.timestamp)");
    auto write = [&](Stmt& s, const Metric& m) {
      const bool nan = std::isnan(m.value);
      s.Bind(1, run_id).Bind(2, m.key).Bind(3, nan ? 0.0 : m.value).Bind(4, static_cast<int64_t>(nan)).Bind(5, m.timestamp).Bind(6, m.step);
      s.Run();
      s.Reset();
    };
    // Every point goes to the history; only each key's latest point in the batch can change
    // latest_metrics (highest step, then timestamp; the later one on a tie, as the upsert does).
    std::map<std::string_view, const Metric*> newest;
    for (const Metric& m : metrics) {
      write(history, m);
      const Metric*& best = newest[m.key];
      if (!best || m.step > best->step || (m.step == best->step && m.timestamp >= best->timestamp)) best = &m;
    }
    for (const auto& [key, m] : newest) write(latest, *m);
  }
  t.Commit();
}

void Store::DeleteTag(const std::string& run_id, const std::string& key) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetRun(run_id);
  Stmt s(db_, "DELETE FROM tags WHERE run_uuid = ? AND key = ?");
  s.Bind(1, run_id).Bind(2, key).Run();
  if (sqlite3_changes(db_) == 0) throw NotFoundError("run '" + run_id + "' has no tag '" + key + "'");
}

std::vector<Metric> Store::GetMetricHistory(const std::string& run_id, const std::string& key) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetRun(run_id);
  Stmt s(db_, "SELECT value, is_nan, timestamp, step FROM metrics WHERE run_uuid = ? AND key = ? ORDER BY step, timestamp");
  s.Bind(1, run_id).Bind(2, key);
  std::vector<Metric> out;
  while (s.Step()) out.push_back({key, s.Int(1) ? NAN : s.Real(0), s.Int(2), s.Int(3)});
  return out;
}

namespace {

using SqlValue = std::variant<std::string, int64_t, double>;

// A runs column for attributes.KEY, and whether it holds a number.
std::pair<std::string, bool> RunColumn(const std::string& key, const std::string& where) {
  if (key == "start_time" || key == "end_time") return {"r." + key, true};
  if (key == "status" || key == "user_id" || key == "artifact_uri" || key == "lifecycle_stage") return {"r." + key, false};
  if (key == "run_name") return {"r.name", false};
  if (key == "run_id" || key == "run_uuid") return {"r.run_uuid", false};
  throw InvalidError(where + ": unknown attribute '" + key +
                     "' (run_id, run_name, status, user_id, start_time, end_time, artifact_uri)");
}

// `column op ?` for a text comparison; LIKE through GLOB, which keeps case as MLflow's LIKE does.
std::string TextCondition(const std::string& column, const Clause& c, std::vector<SqlValue>& values) {
  if (c.op == "like" || c.op == "ilike") {
    values.emplace_back(c.op == "like" ? LikeToGlob(c.text) : AsciiLower(LikeToGlob(c.text)));
    return (c.op == "like" ? column : "lower(" + column + ")") + " GLOB ?";
  }
  if (c.op != "=" && c.op != "!=") throw InvalidError("strings compare with =, !=, LIKE or ILIKE, not " + c.op);
  values.emplace_back(c.text);
  return column + " " + c.op + " ?";
}

}  // namespace

Store::RunPage Store::SearchRuns(const RunSearch& q) {
  if (q.max_results < 1) throw InvalidError("max_results must be at least 1");
  if (q.offset < 0) throw InvalidError("the page offset must not be negative");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  std::vector<SqlValue> join_values, where_values;
  std::string joins, where, order;
  if (q.view == "ACTIVE_ONLY") {
    where = " AND r.lifecycle_stage = 'active'";
  } else if (q.view == "DELETED_ONLY") {
    where = " AND r.lifecycle_stage = 'deleted'";
  } else if (q.view != "ALL") {
    throw InvalidError("run_view_type must be ACTIVE_ONLY, DELETED_ONLY or ALL, not '" + q.view + "'");
  }
  if (!q.experiment_ids.empty()) {
    where += " AND r.experiment_id IN (";
    for (size_t i = 0; i < q.experiment_ids.size(); ++i) {
      where += i ? ", ?" : "?";
      where_values.emplace_back(ParseId("experiment", q.experiment_ids[i]));
    }
    where += ")";
  }
  const std::string in_filter = "filter '" + q.filter + "'";
  for (const Clause& c : ParseFilter(q.filter)) {
    if (c.kind == "metrics") {
      where_values.emplace_back(c.key);
      where_values.emplace_back(c.number);
      where += " AND EXISTS (SELECT 1 FROM latest_metrics m WHERE m.run_uuid = r.run_uuid AND m.key = ? AND ";
      where += c.op == "!=" ? "(m.is_nan OR m.value != ?))" : "NOT m.is_nan AND m.value " + c.op + " ?)";
    } else if (c.kind == "params" || c.kind == "tags") {
      where_values.emplace_back(c.key);
      where += " AND EXISTS (SELECT 1 FROM " + c.kind + " x WHERE x.run_uuid = r.run_uuid AND x.key = ? AND " +
               TextCondition("x.value", c, where_values) + ")";
    } else {
      auto [column, numeric] = RunColumn(c.key, in_filter);
      if (numeric) {
        if (!c.numeric) throw InvalidError(in_filter + ": attributes." + c.key + " compares with a number");
        CompareNumbers(c.op, 0, 0);  // rejects LIKE
        where_values.emplace_back(static_cast<int64_t>(c.number));
        where += " AND " + column + " " + c.op + " ?";
      } else {
        where += " AND " + TextCondition(column, c, where_values);
      }
    }
  }
  int n = 0;
  for (const OrderKey& k : ParseOrderBy(q.order_by)) {
    const std::string dir = k.desc ? " DESC" : " ASC";
    const std::string alias = "o" + std::to_string(n++);
    if (k.kind == "attributes") {
      order += RunColumn(k.key, "order_by").first + dir + ", ";
      continue;
    }
    const std::string table = k.kind == "metrics" ? "latest_metrics" : k.kind;
    joins += " LEFT JOIN " + table + " " + alias + " ON " + alias + ".run_uuid = r.run_uuid AND " + alias + ".key = ?";
    join_values.emplace_back(k.key);
    // Runs without the key (and NaN metrics) come last, as in MLflow.
    order += "(" + alias + ".value IS NULL" + (k.kind == "metrics" ? " OR " + alias + ".is_nan" : "") + "), " + alias + ".value" + dir + ", ";
  }
  const std::string sql = "SELECT r.run_uuid FROM runs r" + joins + " WHERE 1" + where + " ORDER BY " + order +
                          "r.start_time DESC, r.run_uuid LIMIT ? OFFSET ?";
  std::vector<std::string> ids;
  {
    Stmt s(db_, sql);
    int i = 1;
    for (const auto* values : {&join_values, &where_values}) {
      for (const SqlValue& v : *values) std::visit([&](const auto& x) { s.Bind(i++, x); }, v);
    }
    s.Bind(i, q.max_results + 1);
    s.Bind(i + 1, q.offset);
    while (s.Step()) ids.push_back(s.Text(0));
  }
  RunPage page;
  if (static_cast<int64_t>(ids.size()) > q.max_results) {
    ids.pop_back();
    page.next_offset = q.offset + q.max_results;
  }
  page.runs = LoadRuns(ids);
  return page;
}

// Runs with their data, in the order of `ids`: a few queries for a chunk of runs, not four a run.
std::vector<Run> Store::LoadRuns(const std::vector<std::string>& ids) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  std::vector<Run> out(ids.size());
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < ids.size(); ++i) index.emplace(ids[i], i);
  constexpr size_t kChunk = 500;
  for (size_t first = 0; first < ids.size(); first += kChunk) {
    const size_t count = std::min(kChunk, ids.size() - first);
    std::string in = "(";
    for (size_t i = 0; i < count; ++i) in += i ? ",?" : "?";
    in += ")";
    auto query = [&](const std::string& sql, auto&& row) {
      Stmt s(db_, sql + in);
      for (size_t i = 0; i < count; ++i) s.Bind(static_cast<int>(i + 1), ids[first + i]);
      while (s.Step()) row(s, out[index.at(s.Text(0))]);
    };
    query("SELECT * FROM runs WHERE run_uuid IN ", [](Stmt& s, Run& r) { r.info = ReadRunInfo(s); });
    query("SELECT run_uuid, key, value, is_nan, timestamp, step FROM latest_metrics WHERE run_uuid IN ", [](Stmt& s, Run& r) {
      r.metrics.push_back({s.Text(1), s.Int(3) ? NAN : s.Real(2), s.Int(4), s.Int(5)});
    });
    query("SELECT run_uuid, key, value FROM params WHERE run_uuid IN ", [](Stmt& s, Run& r) { r.params[s.Text(1)] = s.Text(2); });
    query("SELECT run_uuid, key, value FROM tags WHERE run_uuid IN ", [](Stmt& s, Run& r) { r.tags[s.Text(1)] = s.Text(2); });
  }
  for (Run& r : out) {
    std::sort(r.metrics.begin(), r.metrics.end(), [](const Metric& a, const Metric& b) { return a.key < b.key; });
  }
  return out;
}

std::string Store::LogArtifact(const std::string& run_id, const std::string& local_path, const std::string& artifact_path) {
  RunInfo r = GetRun(run_id).info;
  fs::path dest = fs::path(r.artifact_uri) / Confined(artifact_path);
  std::error_code ec;
  if (!fs::exists(local_path, ec)) throw NotFoundError("artifact '" + local_path + "' does not exist");
  fs::create_directories(dest, ec);
  if (ec) throw SystemError("creating artifact directory", dest.string(), ec.value());
  fs::path target = dest / fs::path(local_path).filename();
  fs::copy(local_path, target, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  if (ec) throw SystemError("copying artifact '" + local_path + "' to", target.string(), ec.value());
  return target.string();
}

// ---- model registry ----

namespace {

ModelVersion ReadVersion(sqlite3* db, Stmt& s) {
  ModelVersion v;
  v.name = s.Text(0);
  v.version = std::to_string(s.Int(1));
  v.creation_timestamp = s.Int(2);
  v.last_updated_timestamp = s.Int(3);
  v.description = s.Text(4);
  v.source = s.Text(5);
  v.run_id = s.Text(6);
  v.status = s.Text(7);
  Stmt a(db, "SELECT alias FROM model_aliases WHERE name = ? AND version = ? ORDER BY alias");
  a.Bind(1, v.name).Bind(2, s.Int(1));
  while (a.Step()) v.aliases.push_back(a.Text(0));
  return v;
}

}  // namespace

RegisteredModel Store::CreateRegisteredModel(const std::string& name, const std::string& description) {
  CheckKey("registered model", name);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt exists(db_, "SELECT 1 FROM registered_models WHERE name = ?");
  if (exists.Bind(1, name).Step()) throw ConflictError("registered model '" + name + "' exists already");
  const int64_t now = NowMillis();
  Stmt s(db_, "INSERT INTO registered_models VALUES (?, ?, ?, ?)");
  s.Bind(1, name).Bind(2, now).Bind(3, now).Bind(4, description).Run();
  return GetRegisteredModel(name);
}

RegisteredModel Store::GetRegisteredModel(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, "SELECT * FROM registered_models WHERE name = ?");
  if (!s.Bind(1, name).Step()) throw NotFoundError("registered model '" + name + "' does not exist");
  RegisteredModel m;
  m.name = s.Text(0);
  m.creation_timestamp = s.Int(1);
  m.last_updated_timestamp = s.Int(2);
  m.description = s.Text(3);
  Stmt latest(db_, "SELECT * FROM model_versions WHERE name = ? ORDER BY version DESC LIMIT 1");
  latest.Bind(1, name);
  while (latest.Step()) m.latest_versions.push_back(ReadVersion(db_, latest));
  Stmt a(db_, "SELECT alias, version FROM model_aliases WHERE name = ? ORDER BY alias");
  a.Bind(1, name);
  while (a.Step()) m.aliases[a.Text(0)] = std::to_string(a.Int(1));
  return m;
}

std::vector<RegisteredModel> Store::ListRegisteredModels() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, "SELECT name FROM registered_models ORDER BY name");
  std::vector<std::string> names;
  while (s.Step()) names.push_back(s.Text(0));
  std::vector<RegisteredModel> out;
  for (const std::string& n : names) out.push_back(GetRegisteredModel(n));
  return out;
}

ModelVersion Store::CreateModelVersion(const std::string& name, const std::string& source, const std::string& run_id,
                                       const std::string& description) {
  if (source.empty()) throw InvalidError("a model version needs a source (where its files are)");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!run_id.empty()) GetRun(run_id);
  Transaction t(db_);
  {
    Stmt exists(db_, "SELECT 1 FROM registered_models WHERE name = ?");
    if (!exists.Bind(1, name).Step()) CreateRegisteredModel(name);
  }
  Stmt next(db_, "SELECT COALESCE(MAX(version), 0) + 1 FROM model_versions WHERE name = ?");
  next.Bind(1, name).Step();
  const int64_t version = next.Int(0);
  const int64_t now = NowMillis();
  Stmt s(db_, "INSERT INTO model_versions VALUES (?, ?, ?, ?, ?, ?, ?, 'READY')");
  s.Bind(1, name).Bind(2, version).Bind(3, now).Bind(4, now).Bind(5, description).Bind(6, source).Bind(7, run_id).Run();
  Stmt touch(db_, "UPDATE registered_models SET last_updated_time = ? WHERE name = ?");
  touch.Bind(1, now).Bind(2, name).Run();
  t.Commit();
  return GetModelVersion(name, std::to_string(version));
}

ModelVersion Store::GetModelVersion(const std::string& name, const std::string& version) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, "SELECT * FROM model_versions WHERE name = ? AND version = ?");
  if (!s.Bind(1, name).Bind(2, ParseId("model version", version)).Step()) {
    throw NotFoundError("model '" + name + "' has no version " + version);
  }
  return ReadVersion(db_, s);
}

void Store::SetAlias(const std::string& name, const std::string& alias, const std::string& version) {
  CheckKey("alias", alias);
  if (alias == "latest" || (alias.size() > 1 && (alias[0] == 'v' || alias[0] == 'V') &&
                            alias.find_first_not_of("0123456789", 1) == std::string::npos)) {
    throw InvalidError("alias '" + alias + "' is reserved (latest, and v<number>)");
  }
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetModelVersion(name, version);
  Stmt s(db_, "INSERT INTO model_aliases VALUES (?, ?, ?) ON CONFLICT (name, alias) DO UPDATE SET version = excluded.version");
  s.Bind(1, name).Bind(2, alias).Bind(3, ParseId("model version", version)).Run();
}

void Store::DeleteAlias(const std::string& name, const std::string& alias) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetRegisteredModel(name);
  Stmt s(db_, "DELETE FROM model_aliases WHERE name = ? AND alias = ?");
  s.Bind(1, name).Bind(2, alias).Run();
  if (sqlite3_changes(db_) == 0) throw NotFoundError("model '" + name + "' has no alias '" + alias + "'");
}

ModelVersion Store::GetModelVersionByAlias(const std::string& name, const std::string& alias) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, "SELECT version FROM model_aliases WHERE name = ? AND alias = ?");
  if (!s.Bind(1, name).Bind(2, alias).Step()) throw NotFoundError("model '" + name + "' has no alias '" + alias + "'");
  return GetModelVersion(name, std::to_string(s.Int(0)));
}

std::vector<ModelVersion> Store::ListModelVersions(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Stmt s(db_, name.empty() ? "SELECT * FROM model_versions ORDER BY name, version"
                           : "SELECT * FROM model_versions WHERE name = ? ORDER BY version");
  if (!name.empty()) s.Bind(1, name);
  std::vector<ModelVersion> out;
  while (s.Step()) out.push_back(ReadVersion(db_, s));
  return out;
}

void Store::RenameRegisteredModel(const std::string& name, const std::string& new_name) {
  CheckKey("registered model", new_name);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetRegisteredModel(name);
  Stmt exists(db_, "SELECT 1 FROM registered_models WHERE name = ?");
  if (exists.Bind(1, new_name).Step()) throw ConflictError("registered model '" + new_name + "' exists already");
  Transaction t(db_);
  Exec(db_, "PRAGMA defer_foreign_keys = ON");
  for (const char* table : {"registered_models", "model_versions", "model_aliases"}) {
    Stmt u(db_, std::string("UPDATE ") + table + " SET name = ? WHERE name = ?");
    u.Bind(1, new_name).Bind(2, name).Run();
  }
  t.Commit();
}

void Store::UpdateRegisteredModel(const std::string& name, const std::string& description) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetRegisteredModel(name);
  Stmt u(db_, "UPDATE registered_models SET description = ?, last_updated_time = ? WHERE name = ?");
  u.Bind(1, description).Bind(2, NowMillis()).Bind(3, name).Run();
}

void Store::DeleteRegisteredModel(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetRegisteredModel(name);
  Transaction t(db_);
  for (const char* table : {"model_aliases", "model_versions", "registered_models"}) {
    Stmt d(db_, std::string("DELETE FROM ") + table + " WHERE name = ?");
    d.Bind(1, name).Run();
  }
  t.Commit();
}

void Store::UpdateModelVersion(const std::string& name, const std::string& version, const std::string& description) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetModelVersion(name, version);
  Stmt u(db_, "UPDATE model_versions SET description = ?, last_updated_time = ? WHERE name = ? AND version = ?");
  u.Bind(1, description).Bind(2, NowMillis()).Bind(3, name).Bind(4, ParseId("model version", version)).Run();
}

void Store::DeleteModelVersion(const std::string& name, const std::string& version) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  GetModelVersion(name, version);
  Transaction t(db_);
  for (const char* table : {"model_aliases", "model_versions"}) {
    Stmt d(db_, std::string("DELETE FROM ") + table + " WHERE name = ? AND version = ?");
    d.Bind(1, name).Bind(2, ParseId("model version", version)).Run();
  }
  t.Commit();
}

}  // namespace shoal::track
