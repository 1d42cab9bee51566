#include "track/mlruns.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "util/error.h"

namespace shoal::track {

namespace fs = std::filesystem;

namespace {

// meta.yaml as the FileStore writes it: flat "key: value" lines (values possibly quoted).
std::map<std::string, std::string> ReadMeta(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw NotFoundError("'" + path.string() + "' is missing (not an MLflow FileStore folder?)");
  std::map<std::string, std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == ' ' || line[0] == '#') continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    if (value == "null") value.clear();
    out[line.substr(0, colon)] = value;
  }
  return out;
}

int64_t Int(const std::map<std::string, std::string>& meta, const std::string& key) {
  auto it = meta.find(key);
  if (it == meta.end() || it->second.empty()) return 0;
  try {
    return std::stoll(it->second);
  } catch (const std::exception&) {
    throw InvalidError("meta.yaml: '" + key + "' is '" + it->second + "', not a number");
  }
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Files under `dir` (params, tags, metrics); a key with '/' is a nested file.
std::vector<std::pair<std::string, fs::path>> Keys(const fs::path& dir) {
  std::vector<std::pair<std::string, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.emplace_back(fs::relative(e.path(), dir).generic_string(), e.path());
  }
  return out;
}

}  // namespace

ImportSummary ImportMlruns(Store& store, const std::string& mlruns_dir) {
  ImportSummary summary;
  std::error_code ec;
  if (!fs::is_directory(mlruns_dir, ec)) throw NotFoundError("'" + mlruns_dir + "' is not a directory");
  const char* statuses[] = {"", "RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED"};
  for (const auto& exp_dir : fs::directory_iterator(mlruns_dir)) {
    if (!exp_dir.is_directory() || !fs::exists(exp_dir.path() / "meta.yaml")) continue;  // .trash, models/
    std::map<std::string, std::string> exp_meta = ReadMeta(exp_dir.path() / "meta.yaml");
    if (exp_meta["name"].empty()) continue;
    const std::string experiment = store.EnsureExperiment(exp_meta["name"]);
    ++summary.experiments;
    for (const auto& run_dir : fs::directory_iterator(exp_dir.path())) {
      if (!run_dir.is_directory() || !fs::exists(run_dir.path() / "meta.yaml")) continue;
      std::map<std::string, std::string> meta = ReadMeta(run_dir.path() / "meta.yaml");
      RunInfo info;
      info.run_id = meta.count("run_id") && !meta["run_id"].empty() ? meta["run_id"] : run_dir.path().filename().string();
      info.experiment_id = experiment;
      info.run_name = meta["run_name"];
      info.user_id = meta["user_id"];
      const int64_t status = Int(meta, "status");
      info.status = status >= 1 && status <= 5 ? statuses[status] : "FINISHED";
      info.start_time = Int(meta, "start_time");
      info.end_time = Int(meta, "end_time");
      try {
        store.ImportRun(info);
      } catch (const Error& e) {
        summary.skipped.push_back("run " + info.run_id + ": " + e.what());
        continue;
      }
      std::map<std::string, std::string> params, tags;
      for (const auto& [key, path] : Keys(run_dir.path() / "params")) params[key] = Slurp(path);
      for (const auto& [key, path] : Keys(run_dir.path() / "tags")) tags[key] = Slurp(path);
      if (!info.run_name.empty()) tags["mlflow.runName"] = info.run_name;
      auto chunked = [&](const std::map<std::string, std::string>& all, bool are_params) {
        std::map<std::string, std::string> chunk;
        for (const auto& kv : all) {
          chunk.insert(kv);
          if (chunk.size() == 100) {
            are_params ? store.LogBatch(info.run_id, {}, chunk) : store.LogBatch(info.run_id, {}, {}, chunk);
            chunk.clear();
          }
        }
        if (!chunk.empty()) are_params ? store.LogBatch(info.run_id, {}, chunk) : store.LogBatch(info.run_id, {}, {}, chunk);
      };
      chunked(params, true);
      chunked(tags, false);
      for (const auto& [key, path] : Keys(run_dir.path() / "metrics")) {
        std::ifstream in(path);
        std::vector<Metric> batch;
        for (std::string line; std::getline(in, line);) {
          std::istringstream words(line);
          Metric m;
          m.key = key;
          std::string value;
          if (!(words >> m.timestamp >> value)) continue;
          m.value = value == "nan" || value == "NaN" ? NAN : std::stod(value);
          if (!(words >> m.step)) m.step = 0;
          batch.push_back(m);
          if (batch.size() == kMaxBatchMetrics) {
            store.LogBatch(info.run_id, batch);
            summary.metrics += static_cast<int64_t>(batch.size());
            batch.clear();
          }
        }
        if (!batch.empty()) store.LogBatch(info.run_id, batch);
        summary.metrics += static_cast<int64_t>(batch.size());
      }
      const fs::path artifacts = run_dir.path() / "artifacts";
      if (fs::is_directory(artifacts, ec)) {
        for (const auto& e : fs::directory_iterator(artifacts)) store.LogArtifact(info.run_id, e.path().string());
      }
      if (meta["lifecycle_stage"] == "deleted") store.SetRunLifecycle(info.run_id, true);
      ++summary.runs;
    }
  }
  return summary;
}

}  // namespace shoal::track
