#include "track/backend.h"

#include <httplib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "track/mlflow_json.h"
#include "util/error.h"

namespace shoal::track {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class LocalStoreBackend : public Backend {
 public:
  explicit LocalStoreBackend(std::shared_ptr<Store> store) : store_(std::move(store)) {}
  std::string Describe() const override { return "sqlite://" + store_->path(); }
  std::string EnsureExperiment(const std::string& name) override { return store_->EnsureExperiment(name); }
  RunInfo CreateRun(const std::string& experiment_id, const std::string& run_name,
                    const std::map<std::string, std::string>& tags) override {
    return store_->CreateRun(experiment_id, run_name, 0, tags);
  }
  void UpdateRun(const std::string& run_id, const std::string& status, int64_t end_time) override {
    store_->UpdateRun(run_id, status, end_time);
  }
  Run GetRun(const std::string& run_id) override { return store_->GetRun(run_id); }
  void LogBatch(const std::string& run_id, const std::vector<Metric>& metrics, const std::map<std::string, std::string>& params,
                const std::map<std::string, std::string>& tags) override {
    store_->LogBatch(run_id, metrics, params, tags);
  }
  std::string LogArtifact(const std::string& run_id, const std::string& local_path, const std::string& artifact_path) override {
    return store_->LogArtifact(run_id, local_path, artifact_path);
  }
  ModelVersion CreateModelVersion(const std::string& name, const std::string& source, const std::string& run_id) override {
    return store_->CreateModelVersion(name, source, run_id);
  }
  void SetAlias(const std::string& name, const std::string& alias, const std::string& version) override {
    store_->SetAlias(name, alias, version);
  }

 private:
  std::shared_ptr<Store> store_;
};

// Percent-encodes a path, keeping '/' and RFC 3986's unreserved characters.
std::string EncodePath(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::map<std::string, std::string> KeyValueMap(const json& list) {
  std::map<std::string, std::string> out;
  if (!list.is_array()) return out;
  for (const json& kv : list) out[kv.value("key", "")] = kv.value("value", "");
  return out;
}

// MLflow sends int64 fields as JSON strings or numbers, depending on the server.
int64_t Int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number()) return it->get<int64_t>();
  if (it->is_string()) return std::strtoll(it->get<std::string>().c_str(), nullptr, 10);
  return 0;
}

RunInfo ParseRunInfo(const json& j) {
  RunInfo r;
  r.run_id = j.value("run_id", j.value("run_uuid", ""));
  r.experiment_id = j.value("experiment_id", "");
  r.run_name = j.value("run_name", "");
  r.user_id = j.value("user_id", "");
  r.status = j.value("status", "RUNNING");
  r.start_time = Int(j, "start_time");
  r.end_time = Int(j, "end_time");
  r.artifact_uri = j.value("artifact_uri", "");
  r.lifecycle_stage = j.value("lifecycle_stage", "active");
  return r;
}

std::string TransportError(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "cannot connect (nothing listening there, or no route)";
    case httplib::Error::ConnectionTimeout: return "connecting timed out";
    case httplib::Error::Read: return "no reply (reading failed or timed out)";
    case httplib::Error::Write: return "sending the request failed";
    case httplib::Error::SSLConnection: return "the TLS connection failed";
    case httplib::Error::SSLServerVerification: return "the server's TLS certificate did not verify";
    default: return httplib::to_string(e);
  }
}

class RestBackend : public Backend {
 public:
  RestBackend(const std::string& uri, const BackendOptions& options) : uri_(uri) {
    // scheme://authority[/base]
    const size_t authority = uri.find("://") + 3;
    const size_t slash = uri.find('/', authority);
    const std::string origin = uri.substr(0, slash);
    base_ = slash == std::string::npos ? "" : uri.substr(slash);
    while (!base_.empty() && base_.back() == '/') base_.pop_back();
    if (uri.size() <= authority || origin.size() <= authority) throw InvalidError("tracking URI '" + uri + "' names no host");
    client_ = std::make_unique<httplib::Client>(origin);
    if (!client_->is_valid()) throw InvalidError("tracking URI '" + uri + "': cannot make a client for '" + origin + "'");
    const auto seconds = static_cast<time_t>(options.timeout_s);
    const auto micros = static_cast<time_t>((options.timeout_s - static_cast<double>(seconds)) * 1e6);
    client_->set_connection_timeout(std::min<time_t>(seconds, 10), seconds >= 10 ? 0 : micros);
    client_->set_read_timeout(seconds, micros);
    client_->set_write_timeout(seconds, micros);
    client_->set_keep_alive(true);
    std::string token = options.token;
    if (token.empty()) {
      if (const char* env = std::getenv("MLFLOW_TRACKING_TOKEN"); env && *env) token = env;
    }
    if (!token.empty()) client_->set_bearer_token_auth(token);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (fs::exists("/etc/ssl/certs/ca-certificates.crt")) client_->set_ca_cert_path("/etc/ssl/certs/ca-certificates.crt");
    client_->enable_server_certificate_verification(true);
#endif
  }

  std::string Describe() const override { return uri_; }

  std::string EnsureExperiment(const std::string& name) override {
    try {
      return Call("GET", "experiments/get-by-name", {{"experiment_name", name}})["experiment"]["experiment_id"];
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kNotFound) throw;
    }
    try {
      return Call("POST", "experiments/create", {{"name", name}})["experiment_id"];
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kConflict) throw;  // created meanwhile by another client
      return Call("GET", "experiments/get-by-name", {{"experiment_name", name}})["experiment"]["experiment_id"];
    }
  }

  RunInfo CreateRun(const std::string& experiment_id, const std::string& run_name,
                    const std::map<std::string, std::string>& tags) override {
    json req = {{"experiment_id", experiment_id}, {"start_time", NowMillis()}, {"tags", KeyValueList(tags)}};
    if (!run_name.empty()) req["run_name"] = run_name;
    return ParseRunInfo(Call("POST", "runs/create", req)["run"]["info"]);
  }

  void UpdateRun(const std::string& run_id, const std::string& status, int64_t end_time) override {
    json req = {{"run_id", run_id}, {"run_uuid", run_id}, {"status", status}};
    if (status != "RUNNING" && status != "SCHEDULED") req["end_time"] = end_time > 0 ? end_time : NowMillis();
    Call("POST", "runs/update", req);
  }

  Run GetRun(const std::string& run_id) override {
    const json j = Call("GET", "runs/get", {{"run_id", run_id}})["run"];
    Run r;
    r.info = ParseRunInfo(j["info"]);
    const json& data = j.contains("data") ? j["data"] : json::object();
    if (data.contains("metrics")) {
      for (const json& m : data["metrics"]) {
        r.metrics.push_back({m.value("key", ""), MetricValueFromJson(m["value"]).value_or(NAN), Int(m, "timestamp"), Int(m, "step")});
      }
    }
    r.params = KeyValueMap(data.value("params", json::array()));
    r.tags = KeyValueMap(data.value("tags", json::array()));
    return r;
  }

  void LogBatch(const std::string& run_id, const std::vector<Metric>& metrics, const std::map<std::string, std::string>& params,
                const std::map<std::string, std::string>& tags) override {
    json list = json::array();
    for (const Metric& m : metrics) list.push_back(ToJson(m));
    Call("POST", "runs/log-batch", {{"run_id", run_id}, {"metrics", list}, {"params", KeyValueList(params)}, {"tags", KeyValueList(tags)}});
  }

  std::string LogArtifact(const std::string& run_id, const std::string& local_path, const std::string& artifact_path) override {
    if (!fs::exists(local_path)) throw NotFoundError("artifact '" + local_path + "' does not exist");
    const std::string root = GetRun(run_id).info.artifact_uri;
    std::string dest = root;
    if (!artifact_path.empty()) dest += "/" + artifact_path;
    dest += "/" + fs::path(local_path).filename().string();
    const std::string proxy = "mlflow-artifacts:";
    if (root.rfind(proxy, 0) != 0) {
      throw UnsupportedError("run '" + run_id + "' keeps its artifacts at '" + root +
                             "'; shoal's client uploads through the server's mlflow-artifacts proxy only "
                             "(start MLflow with --serve-artifacts, or use shoal server)");
    }
    // mlflow-artifacts:/0/<run>/artifacts or mlflow-artifacts://host:port/0/<run>/artifacts
    std::string path = root.substr(proxy.size());
    if (path.rfind("//", 0) == 0) path = path.substr(std::min(path.size(), path.find('/', 2)));
    while (!path.empty() && path.front() == '/') path.erase(0, 1);
    if (!artifact_path.empty()) path += "/" + artifact_path;
    const fs::path top(local_path);
    auto upload = [&](const fs::path& file, const std::string& rel) {
      std::ifstream in(file, std::ios::binary);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      if (!in && !in.eof()) throw SystemError("reading artifact", file.string(), errno);
      Send("PUT", base_ + "/api/2.0/mlflow-artifacts/artifacts/" + EncodePath(path + "/" + rel), bytes.str(), "application/octet-stream",
           "PUT mlflow-artifacts " + rel);
    };
    if (fs::is_directory(top)) {
      for (const auto& entry : fs::recursive_directory_iterator(top)) {
        if (entry.is_regular_file()) upload(entry.path(), (top.filename() / fs::relative(entry.path(), top)).generic_string());
      }
    } else {
      upload(top, top.filename().string());
    }
    return dest;
  }

  ModelVersion CreateModelVersion(const std::string& name, const std::string& source, const std::string& run_id) override {
    try {
      Call("POST", "registered-models/create", {{"name", name}});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kConflict) throw;
    }
    const json v = Call("POST", "model-versions/create", {{"name", name}, {"source", source}, {"run_id", run_id}})["model_version"];
    ModelVersion out;
    out.name = v.value("name", name);
    out.version = v["version"].is_string() ? v["version"].get<std::string>() : std::to_string(Int(v, "version"));
    out.source = v.value("source", source);
    out.run_id = v.value("run_id", run_id);
    out.status = v.value("status", "READY");
    out.creation_timestamp = Int(v, "creation_timestamp");
    out.last_updated_timestamp = Int(v, "last_updated_timestamp");
    return out;
  }

  void SetAlias(const std::string& name, const std::string& alias, const std::string& version) override {
    Call("POST", "registered-models/alias", {{"name", name}, {"alias", alias}, {"version", version}});
  }

 private:
  json Call(const std::string& method, const std::string& endpoint, const json& request) {
    std::string path = base_ + "/api/2.0/mlflow/" + endpoint;
    std::string body;
    if (method == "GET") {
      httplib::Params params;
      for (const auto& [k, v] : request.items()) params.emplace(k, v.is_string() ? v.get<std::string>() : v.dump());
      path = httplib::append_query_params(path, params);
    } else {
      body = request.dump();
    }
    const std::string reply = Send(method, path, body, "application/json", method + " " + endpoint);
    if (reply.empty()) return json::object();
    try {
      return json::parse(reply);
    } catch (const json::parse_error&) {
      throw UnavailableError("tracking server " + uri_ + ": " + method + " " + endpoint + " answered something that is not JSON: " +
                             reply.substr(0, 120));
    }
  }

  // One request; the reply's body. Transport failures, 5xx and 429 are kUnavailable (a retry
  // may help); other failures carry the server's error_code as the Error's category.
  std::string Send(const std::string& method, const std::string& path, const std::string& body, const std::string& type,
                   const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    httplib::Result res = method == "GET"   ? client_->Get(path)
                          : method == "PUT" ? client_->Put(path, body, type)
                                            : client_->Post(path, body, type);
    const std::string where = "tracking server " + uri_ + ": " + what;
    if (!res) throw UnavailableError(where + ": " + TransportError(res.error()));
    if (res->status == 200) return res->body;
    std::string code, message = res->body.substr(0, 300);
    try {
      const json e = json::parse(res->body);
      code = e.value("error_code", "");
      message = e.value("message", message);
    } catch (const json::exception&) {
    }
    const std::string text = where + ": HTTP " + std::to_string(res->status) + (code.empty() ? "" : " " + code) + ": " + message;
    if (res->status >= 500 || res->status == 429) throw UnavailableError(text);
    if (res->status == 404 || code == "RESOURCE_DOES_NOT_EXIST") throw NotFoundError(text);
    if (code == "RESOURCE_ALREADY_EXISTS") throw ConflictError(text);
    if (res->status == 401 || res->status == 403) throw InvalidError(text + " (check the token: --auth-token-file, MLFLOW_TRACKING_TOKEN)");
    throw InvalidError(text);
  }

  std::string uri_;
  std::string base_;
  std::mutex mutex_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace

std::shared_ptr<Backend> LocalBackend(std::shared_ptr<Store> store) { return std::make_shared<LocalStoreBackend>(std::move(store)); }

std::shared_ptr<Backend> OpenBackend(const std::string& uri_in, const BackendOptions& options) {
  std::string uri = uri_in;
  if (uri.empty()) {
    const char* env = std::getenv("MLFLOW_TRACKING_URI");
    uri = env && *env ? env : "";
  }
  if (uri.rfind("http://", 0) == 0 || uri.rfind("https://", 0) == 0) return std::make_shared<RestBackend>(uri, options);
  return LocalBackend(std::shared_ptr<Store>(Store::Open(uri, options.artifact_root)));
}

}  // namespace shoal::track
