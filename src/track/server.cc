#include "track/server.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "track/mlflow_json.h"
#include "track/search.h"
#include "track/ui.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::track {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// An error with MLflow's error code and HTTP status.
struct ApiError {
  int status;
  std::string code;
  std::string message;
};

ApiError FromError(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kNotFound:
      return {404, "RESOURCE_DOES_NOT_EXIST", e.what()};
    case ErrorCode::kConflict:
      return {400, "RESOURCE_ALREADY_EXISTS", e.what()};
    case ErrorCode::kInvalid:
    case ErrorCode::kUnsupported:
      return {400, "INVALID_PARAMETER_VALUE", e.what()};
    default:
      return {500, "INTERNAL_ERROR", e.what()};
  }
}

[[noreturn]] void Bad(const std::string& message) { throw ApiError{400, "INVALID_PARAMETER_VALUE", message}; }

std::string Str(const json& req, const char* key, bool required = true, const std::string& fallback = "") {
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) {
    if (required) Bad(std::string("Missing value for required parameter '") + key + "'");
    return fallback;
  }
  if (!it->is_string()) Bad(std::string("Invalid value for parameter '") + key + "': expected a string, got " + it->dump());
  return it->get<std::string>();
}

// An int64 field: a JSON integer, or a string of one (GET query parameters arrive as text).
int64_t IntOf(const json& v, const std::string& what) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    try {
      size_t used = 0;
      int64_t x = std::stoll(v.get<std::string>(), &used);
      if (used == v.get<std::string>().size()) return x;
    } catch (const std::exception&) {
    }
  }
  Bad("Invalid value for parameter '" + what + "': expected an integer, got " + v.dump());
}

int64_t Int(const json& req, const char* key, int64_t fallback) {
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) return fallback;
  return IntOf(*it, key);
}

double Number(const json& v, const std::string& what) {
  if (std::optional<double> x = MetricValueFromJson(v)) return *x;
  Bad("Invalid value for " + what + ": expected a number, got " + v.dump());
}

std::map<std::string, std::string> KeyValues(const json& req, const char* key) {
  std::map<std::string, std::string> out;
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) return out;
  if (!it->is_array()) Bad(std::string("Invalid value for parameter '") + key + "': expected a list");
  for (const json& kv : *it) {
    if (!kv.is_object()) Bad(std::string("Invalid value in '") + key + "': expected {\"key\", \"value\"}");
    out[Str(kv, "key")] = Str(kv, "value", false);
  }
  return out;
}

// runs/log-batch's body, read as a stream of JSON events into metrics, params and tags, without
// building a JSON tree first: a batch of 1000 metrics is the server's hottest request. Accepts
// what the tree-based handlers accept (numbers or numeric strings for int64 fields, "NaN" and
// infinities as strings for values); anything else is INVALID_PARAMETER_VALUE.
struct LogBatchRequest {
  std::string run_id;
  std::vector<Metric> metrics;
  std::map<std::string, std::string> params, tags;
};

class LogBatchSax : public nlohmann::json_sax<json> {
 public:
  explicit LogBatchSax(LogBatchRequest& out) : out_(out) {}
  std::string error;

  bool null() override { return Scalar(nullptr); }
  bool boolean(bool v) override { return Scalar(v); }
  bool number_integer(number_integer_t v) override { return Scalar(v); }
  bool number_unsigned(number_unsigned_t v) override { return Scalar(v); }
  bool number_float(number_float_t v, const string_t&) override { return Scalar(v); }
  bool string(string_t& v) override { return Scalar(v); }
  bool binary(binary_t&) override { return Fail("unexpected binary value"); }
  bool key(string_t& k) override {
    (depth_ == 1 ? field_ : item_key_) = k;
    return true;
  }
  bool start_object(std::size_t) override {
    ++depth_;
    if (skip_ || depth_ == 1) return true;
    if (depth_ == 2) return Container(false);
    if (depth_ == 3) {
      item_ = Item();
      return true;
    }
    return Nested();
  }
  bool end_object() override {
    if (!skip_ && depth_ == 3 && !EndItem()) return false;
    return Leave();
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (skip_) return true;
    if (depth_ == 1) return Fail("the request body must be a JSON object");
    if (depth_ == 2) return Container(true);
    return Nested();
  }
  bool end_array() override { return Leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    return Fail(std::string("malformed JSON: ") + e.what());
  }

 private:
  bool Fail(const std::string& message) {
    if (error.empty()) error = message;
    return false;
  }
  // A value at depth 2 (a field) or inside an entry (depth 3).
  bool Scalar(json v) {
    if (skip_) return true;
    if (depth_ == 0) return Fail("the request body must be a JSON object");
    if (depth_ == 1) {
      if (field_ == "run_id" || field_ == "run_uuid") {
        if (!v.is_string()) return Fail("Invalid value for parameter '" + field_ + "': expected a string, got " + v.dump());
        if (field_ == "run_id" || out_.run_id.empty()) out_.run_id = v.get<std::string>();
        return true;
      }
      if ((field_ == "metrics" || field_ == "params" || field_ == "tags") && !v.is_null()) {
        return Fail("Invalid value for parameter '" + field_ + "': expected a list");
      }
      return true;  // other fields are not ours
    }
    if (depth_ == 2) return Fail("Invalid value in '" + list_ + "': expected objects, got " + v.dump());
    const std::string where = "'" + item_key_ + "' in '" + list_ + "'";
    if (item_key_ == "key" || (item_key_ == "value" && list_ != "metrics")) {
      if (v.is_null()) return true;
      if (!v.is_string()) return Fail("Invalid value for " + where + ": expected a string, got " + v.dump());
      (item_key_ == "key" ? item_.key : item_.text) = v.get<std::string>();
      (item_key_ == "key" ? item_.has_key : item_.has_value) = true;
    } else if (list_ == "metrics" && item_key_ == "value") {
      item_.metric.value = Number(v, "metric value");
      item_.has_value = true;
    } else if (list_ == "metrics" && (item_key_ == "timestamp" || item_key_ == "step")) {
      if (v.is_null()) return true;
      (item_key_ == "step" ? item_.metric.step : item_.metric.timestamp) = IntOf(v, item_key_);
      if (item_key_ == "timestamp") item_.has_timestamp = true;
    }
    return true;
  }
  // A list or object inside an entry: skipped under a field that is not ours, else wrong.
  bool Nested() {
    if (depth_ == 4 && item_key_ != "key" && item_key_ != "value" && item_key_ != "timestamp" && item_key_ != "step") {
      skip_ = depth_;
      return true;
    }
    return Fail("Invalid value for '" + item_key_ + "' in '" + list_ + "': expected a scalar");
  }
  // The value of field_ starts (depth 2): one of our lists, or something to skip.
  bool Container(bool is_array) {
    if (field_ == "metrics" || field_ == "params" || field_ == "tags") {
      if (!is_array) return Fail("Invalid value for parameter '" + field_ + "': expected a list");
      list_ = field_;
      return true;
    }
    skip_ = depth_;
    return true;
  }
  bool Leave() {
    if (skip_ == depth_) skip_ = 0;
    --depth_;
    return true;
  }
  bool EndItem() {
    if (!item_.has_key) return Fail("Missing value for required parameter 'key' in '" + list_ + "'");
    if (list_ == "metrics") {
      if (!item_.has_value) return Fail("each metric needs key, value, timestamp and step");
      if (!item_.has_timestamp) item_.metric.timestamp = NowMillis();
      item_.metric.key = std::move(item_.key);
      out_.metrics.push_back(std::move(item_.metric));
    } else {
      (list_ == "params" ? out_.params : out_.tags)[item_.key] = std::move(item_.text);
    }
    return true;
  }

  // The entry being read: a metric, or a key and value.
  struct Item {
    std::string key, text;
    Metric metric;
    bool has_key = false, has_value = false, has_timestamp = false;
  };
  LogBatchRequest& out_;
  int depth_ = 0;
  int skip_ = 0;  // while non-zero: inside a value that is not ours, which started at this depth
  std::string field_, list_, item_key_;
  Item item_;
};

LogBatchRequest ParseLogBatch(const std::string& body) {
  LogBatchRequest out;
  if (body.empty()) Bad("Missing value for required parameter 'run_id'");
  LogBatchSax sax(out);
  if (!json::sax_parse(body, &sax) || !sax.error.empty()) Bad(sax.error.empty() ? "malformed JSON" : sax.error);
  if (out.run_id.empty()) Bad("Missing value for required parameter 'run_id'");
  return out;
}

// Paging: the token is the offset of the next page.
struct PageRequest {
  int64_t max = 0;
  int64_t offset = 0;
};

PageRequest PageOf(const json& req, int64_t default_max, int64_t limit) {
  PageRequest p;
  p.max = Int(req, "max_results", default_max);
  if (p.max < 1 || p.max > limit) Bad("max_results must be from 1 to " + std::to_string(limit));
  std::string token = Str(req, "page_token", false);
  if (!token.empty()) {
    try {
      size_t used = 0;
      p.offset = std::stoll(token, &used);
      if (used != token.size()) p.offset = -1;
    } catch (const std::exception&) {
      p.offset = -1;
    }
    if (p.offset < 0) Bad("Invalid page_token '" + token + "'");
  }
  return p;
}

template <typename T>
json Page(const std::vector<T>& all, const json& req, int64_t default_max, int64_t limit, const char* field) {
  const PageRequest p = PageOf(req, default_max, limit);
  json items = json::array();
  for (int64_t k = p.offset; k < static_cast<int64_t>(all.size()) && k < p.offset + p.max; ++k) items.push_back(ToJson(all[k]));
  json out = {{field, items}};
  if (p.offset + p.max < static_cast<int64_t>(all.size())) out["next_page_token"] = std::to_string(p.offset + p.max);
  return out;
}

// A field that is one string or a list of strings.
std::vector<std::string> Strings(const json& req, const char* key) {
  std::vector<std::string> out;
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) return out;
  if (it->is_string()) return {it->get<std::string>()};
  if (!it->is_array()) Bad(std::string(key) + " must be a list of strings");
  for (const json& x : *it) {
    if (!x.is_string()) Bad(std::string(key) + " must be a list of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

// view_type / run_view_type: which lifecycle stages a search returns.
struct View {
  bool include_deleted = false;
  bool only_deleted = false;
  bool Keeps(const std::string& stage) const { return !only_deleted || stage == "deleted"; }
};

View ViewOf(const json& req, const char* key) {
  std::string view = Str(req, key, false, "ACTIVE_ONLY");
  if (view != "ACTIVE_ONLY" && view != "DELETED_ONLY" && view != "ALL") Bad(std::string(key) + " must be ACTIVE_ONLY, DELETED_ONLY or ALL");
  return {view != "ACTIVE_ONLY", view == "DELETED_ONLY"};
}

// `rel` under `root`: relative, without '..', and not through a symlink that leads out.
fs::path Inside(const fs::path& root_dir, const std::string& rel) {
  fs::path p(rel);
  if (p.is_absolute()) Bad("artifact path '" + rel + "' must be relative");
  for (const auto& part : p) {
    if (part == "..") Bad("artifact path '" + rel + "' must not contain '..'");
  }
  const fs::path root = fs::weakly_canonical(root_dir);
  const fs::path target = fs::weakly_canonical(root / p);
  auto [end, _] = std::mismatch(root.begin(), root.end(), target.begin(), target.end());
  if (end != root.end()) Bad("artifact path '" + rel + "' leads outside the artifacts");
  return target;
}

// A run's artifact location as clients see it: under the artifact root, the mlflow-artifacts
// proxy's URI (as MLflow's server with --serve-artifacts gives), so clients on other machines
// upload through this server; elsewhere, as stored.
RunInfo Served(RunInfo info, const std::string& artifact_root) {
  const std::string root = fs::path(artifact_root).lexically_normal().string();
  const std::string uri = fs::path(info.artifact_uri).lexically_normal().string();
  if (!root.empty() && uri.size() > root.size() && uri.compare(0, root.size(), root) == 0 &&
      (root.back() == '/' || uri[root.size()] == '/')) {
    info.artifact_uri = "mlflow-artifacts:/" + uri.substr(root.size() + (root.back() == '/' ? 0 : 1));
  }
  return info;
}

Run Served(Run run, const std::string& artifact_root) {
  run.info = Served(std::move(run.info), artifact_root);
  return run;
}

}  // namespace

Server::Server(std::shared_ptr<Store> store, ServerOptions options)
    : store_(std::move(store)), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  Routes();
}

Server::~Server() {
  Stop();
  if (bound_ && !entered_) Run();  // bound, never served: close the socket
}

int Server::Bind() {
  if (bound_) return port_;
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ < 0) {
    throw IOError("cannot listen on " + options_.host + ":" + std::to_string(options_.port) + " (in use, or not an address here)");
  }
  bound_ = true;
  return port_;
}

void Server::Run() {
  Bind();
  entered_ = true;
  // Stopped before it ran: listen just long enough to stop, which closes the bound socket
  // (cpp-httplib closes it only from a running server).
  std::thread closer;
  if (stop_requested_) {
    closer = std::thread([this] {
      while (!http_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      http_->stop();
    });
  }
  http_->listen_after_bind();
  if (closer.joinable()) closer.join();
  returned_ = true;
}

// A Stop() that races a Run() just starting on another thread must not be lost: either Run()
// sees the request, or Stop() waits until it listens and then stops it.
void Server::Stop() {
  stop_requested_ = true;
  if (!http_ || !entered_) return;
  while (!returned_ && !http_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
}

void Server::Routes() {
  httplib::Server& s = *http_;
  s.set_payload_max_length(64 << 20);
  s.set_tcp_nodelay(true);  // no 40 ms stalls from Nagle against delayed ACKs on small replies
  auto store = store_;
  const ServerOptions o = options_;

  // Every API route: auth, a bound on the body, errors as MLflow's bodies. A RawHandler reads
  // the request itself (runs/log-batch parses its body as a stream); a TextHandler gets the
  // request as JSON (the body for POST/PATCH/DELETE, the query for GET) and writes its reply's
  // JSON itself (runs/search, whose pages are large); a Handler returns JSON.
  using Handler = std::function<json(const json&)>;
  using TextHandler = std::function<std::string(const json&)>;
  using RawHandler = std::function<std::string(const httplib::Request&)>;
  auto route = [&s, o](const std::string& method, const std::string& path, RawHandler handler) {
    auto wrapped = [o, handler](const httplib::Request& req, httplib::Response& res) {
      auto reply = [&res](int status, const json& body) {
        res.status = status;
        res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
      };
      try {
        if (!o.auth_token.empty() && req.get_header_value("Authorization") != "Bearer " + o.auth_token) {
          reply(401, {{"error_code", "UNAUTHENTICATED"}, {"message", "a valid bearer token is required"}});
          return;
        }
        if (req.body.size() > o.max_json_bytes) {
          Bad("the request body is " + std::to_string(req.body.size()) + " bytes; the limit is " + std::to_string(o.max_json_bytes));
        }
        res.status = 200;
        res.set_content(handler(req), "application/json");
      } catch (const ApiError& e) {
        reply(e.status, {{"error_code", e.code}, {"message", e.message}});
      } catch (const Error& e) {
        ApiError a = FromError(e);
        reply(a.status, {{"error_code", a.code}, {"message", a.message}});
      } catch (const json::exception& e) {
        reply(400, {{"error_code", "INVALID_PARAMETER_VALUE"}, {"message", std::string("invalid request: ") + e.what()}});
      } catch (const std::exception& e) {
        reply(500, {{"error_code", "INTERNAL_ERROR"}, {"message", e.what()}});
      }
    };
    for (const std::string prefix : {"/api/2.0/mlflow/", "/ajax-api/2.0/mlflow/"}) {
      if (method == "GET") s.Get(prefix + path, wrapped);
      if (method == "POST") s.Post(prefix + path, wrapped);
      if (method == "PATCH") s.Patch(prefix + path, wrapped);
      if (method == "DELETE") s.Delete(prefix + path, wrapped);
    }
  };
  auto api_text = [&route](const std::string& method, const std::string& path, TextHandler handler) {
    route(method, path, [handler](const httplib::Request& req) {
      json body = json::object();
      if (req.method == "GET") {
        for (const auto& [k, v] : req.params) {
          if (body.contains(k)) {
            if (!body[k].is_array()) body[k] = json::array({body[k]});
            body[k].push_back(v);
          } else {
            body[k] = v;
          }
        }
      } else if (!req.body.empty()) {
        try {
          body = json::parse(req.body);
        } catch (const json::parse_error& e) {
          Bad(std::string("malformed JSON: ") + e.what());
        }
        if (!body.is_object()) Bad("the request body must be a JSON object");
      }
      return handler(body);
    });
  };
  auto api = [&api_text](const std::string& method, const std::string& path, Handler handler) {
    api_text(method, path, [handler](const json& r) { return handler(r).dump(-1, ' ', false, json::error_handler_t::replace); });
  };

  // ---- experiments ----
  api("POST", "experiments/create", [store](const json& r) {
    return json{{"experiment_id", store->CreateExperiment(Str(r, "name"), Str(r, "artifact_location", false), KeyValues(r, "tags"))}};
  });
  api("GET", "experiments/get", [store](const json& r) { return json{{"experiment", ToJson(store->GetExperiment(Str(r, "experiment_id")))}}; });
  api("GET", "experiments/get-by-name",
      [store](const json& r) { return json{{"experiment", ToJson(store->GetExperimentByName(Str(r, "experiment_name")))}}; });
  Handler search_experiments = [store](const json& r) {
    const std::vector<Clause> clauses = ParseFilter(Str(r, "filter", false));
    const View view = ViewOf(r, "view_type");
    std::vector<Experiment> all;
    for (Experiment& e : store->ListExperiments(view.include_deleted)) {
      if (view.Keeps(e.lifecycle_stage) && MatchesExperiment(e, clauses)) all.push_back(std::move(e));
    }
    std::vector<OrderKey> order = ParseOrderBy(Strings(r, "order_by"));
    std::stable_sort(all.begin(), all.end(), [&](const Experiment& a, const Experiment& b) {
      for (const OrderKey& k : order) {
        if (k.kind != "attributes") Bad("experiments order by attributes.name, creation_time, last_update_time or experiment_id");
        auto key = [&](const Experiment& e) -> std::pair<int64_t, std::string> {
          if (k.key == "name") return {0, e.name};
          if (k.key == "creation_time") return {e.creation_time, ""};
          if (k.key == "last_update_time") return {e.last_update_time, ""};
          if (k.key == "experiment_id") return {std::stoll(e.experiment_id), ""};
          Bad("experiments order by attributes.name, creation_time, last_update_time or experiment_id, not " + k.key);
        };
        auto ka = key(a), kb = key(b);
        if (ka != kb) return k.desc ? kb < ka : ka < kb;
      }
      return false;
    });
    return Page(all, r, 1000, 50000, "experiments");
  };
  api("POST", "experiments/search", search_experiments);
  api("GET", "experiments/search", search_experiments);
  api("POST", "experiments/update", [store](const json& r) {
    store->RenameExperiment(Str(r, "experiment_id"), Str(r, "new_name"));
    return json::object();
  });
  api("POST", "experiments/delete", [store](const json& r) {
    store->SetExperimentLifecycle(Str(r, "experiment_id"), true);
    return json::object();
  });
  api("POST", "experiments/restore", [store](const json& r) {
    store->SetExperimentLifecycle(Str(r, "experiment_id"), false);
    return json::object();
  });

  // ---- runs ----
  auto run_id = [](const json& r) {
    std::string id = Str(r, "run_id", false);
    return id.empty() ? Str(r, "run_uuid") : id;
  };
  api("POST", "runs/create", [store](const json& r) {
    RunInfo info = store->CreateRun(Str(r, "experiment_id", false, "0"), Str(r, "run_name", false), Int(r, "start_time", 0),
                                    KeyValues(r, "tags"), Str(r, "user_id", false));
    return json{{"run", ToJson(Served(store->GetRun(info.run_id), store->artifact_root()))}};
  });
  api("POST", "runs/update", [store, run_id](const json& r) {
    std::string status = Str(r, "status", false);
    if (status.empty()) status = store->GetRun(run_id(r)).info.status;
    return json{{"run_info", ToJson(Served(store->UpdateRun(run_id(r), status, Int(r, "end_time", 0), Str(r, "run_name", false)),
                                           store->artifact_root()))}};
  });
  api("GET", "runs/get",
      [store, run_id](const json& r) { return json{{"run", ToJson(Served(store->GetRun(run_id(r)), store->artifact_root()))}}; });
  api("POST", "runs/delete", [store, run_id](const json& r) {
    store->SetRunLifecycle(run_id(r), true);
    return json::object();
  });
  api("POST", "runs/restore", [store, run_id](const json& r) {
    store->SetRunLifecycle(run_id(r), false);
    return json::object();
  });
  api("POST", "runs/log-metric", [store, run_id](const json& r) {
    if (!r.contains("value")) Bad("Missing value for required parameter 'value'");
    store->LogBatch(run_id(r), {{Str(r, "key"), Number(r["value"], "metric value"), Int(r, "timestamp", NowMillis()), Int(r, "step", 0)}});
    return json::object();
  });
  api("POST", "runs/log-parameter", [store, run_id](const json& r) {
    store->LogBatch(run_id(r), {}, {{Str(r, "key"), Str(r, "value")}});
    return json::object();
  });
  api("POST", "runs/set-tag", [store, run_id](const json& r) {
    store->LogBatch(run_id(r), {}, {}, {{Str(r, "key"), Str(r, "value")}});
    return json::object();
  });
  api("POST", "runs/delete-tag", [store, run_id](const json& r) {
    store->DeleteTag(run_id(r), Str(r, "key"));
    return json::object();
  });
  route("POST", "runs/log-batch", [store](const httplib::Request& req) {
    LogBatchRequest b = ParseLogBatch(req.body);
    store->LogBatch(b.run_id, b.metrics, b.params, b.tags);
    return std::string("{}");
  });
  TextHandler search_runs = [store](const json& r) {
    Store::RunSearch q;
    q.experiment_ids = Strings(r, "experiment_ids");
    q.filter = Str(r, "filter", false);
    q.order_by = Strings(r, "order_by");
    q.view = Str(r, "run_view_type", false, "ACTIVE_ONLY");
    const PageRequest p = PageOf(r, 1000, 50000);
    q.max_results = p.max;
    q.offset = p.offset;
    Store::RunPage page = store->SearchRuns(q);
    std::string out = "{\"runs\":[";
    for (size_t k = 0; k < page.runs.size(); ++k) {
      if (k) out += ',';
      page.runs[k].info = Served(std::move(page.runs[k].info), store->artifact_root());
      AppendJson(out, page.runs[k]);
    }
    out += ']';
    if (page.next_offset >= 0) out += ",\"next_page_token\":\"" + std::to_string(page.next_offset) + '"';
    out += '}';
    return out;
  };
  api_text("POST", "runs/search", search_runs);
  api("GET", "metrics/get-history", [store, run_id](const json& r) {
    return Page(store->GetMetricHistory(run_id(r), Str(r, "metric_key")), r, 25000, 25000, "metrics");
  });

  // ---- artifacts ----
  api("GET", "artifacts/list", [store, run_id](const json& r) {
    RunInfo info = store->GetRun(run_id(r)).info;
    const std::string rel = Str(r, "path", false);
    const fs::path p(rel);
    const fs::path dir = Inside(info.artifact_uri, rel);
    json files = json::array();
    std::error_code ec;
    if (fs::is_directory(dir, ec)) {
      std::vector<fs::directory_entry> entries{fs::directory_iterator(dir), fs::directory_iterator()};
      std::sort(entries.begin(), entries.end());
      for (const auto& e : entries) {
        json f = {{"path", (p / e.path().filename()).string()}, {"is_dir", e.is_directory()}};
        if (!e.is_directory()) f["file_size"] = static_cast<int64_t>(e.file_size());
        files.push_back(f);
      }
    }
    return json{{"root_uri", Served(info, store->artifact_root()).artifact_uri}, {"files", files}};
  });

  // ---- model registry ----
  api("POST", "registered-models/create", [store](const json& r) {
    return json{{"registered_model", ToJson(store->CreateRegisteredModel(Str(r, "name"), Str(r, "description", false)))}};
  });
  api("GET", "registered-models/get", [store](const json& r) { return json{{"registered_model", ToJson(store->GetRegisteredModel(Str(r, "name")))}}; });
  Handler search_models = [store](const json& r) {
    std::string filter = Str(r, "filter", false);
    std::vector<RegisteredModel> all;
    std::smatch m;
    static const std::regex by_name(R"(^\s*name\s*(=|LIKE|ILIKE|like|ilike)\s*'([^']*)'\s*$)");
    if (!filter.empty() && !std::regex_match(filter, m, by_name)) Bad("registered-models/search filters on name only: name = 'x' or name LIKE 'x%'");
    for (RegisteredModel& model : store->ListRegisteredModels()) {
      if (!filter.empty() && !CompareText(AsciiLower(m[1].str()), model.name, m[2].str())) continue;
      all.push_back(std::move(model));
    }
    return Page(all, r, 100, 1000, "registered_models");
  };
  api("GET", "registered-models/search", search_models);
  api("POST", "registered-models/search", search_models);
  api("POST", "registered-models/rename", [store](const json& r) {
    store->RenameRegisteredModel(Str(r, "name"), Str(r, "new_name"));
    return json{{"registered_model", ToJson(store->GetRegisteredModel(Str(r, "new_name")))}};
  });
  api("PATCH", "registered-models/update", [store](const json& r) {
    store->UpdateRegisteredModel(Str(r, "name"), Str(r, "description", false));
    return json{{"registered_model", ToJson(store->GetRegisteredModel(Str(r, "name")))}};
  });
  api("DELETE", "registered-models/delete", [store](const json& r) {
    store->DeleteRegisteredModel(Str(r, "name"));
    return json::object();
  });
  api("POST", "registered-models/alias", [store](const json& r) {
    store->SetAlias(Str(r, "name"), Str(r, "alias"), Str(r, "version"));
    return json::object();
  });
  api("DELETE", "registered-models/alias", [store](const json& r) {
    store->DeleteAlias(Str(r, "name"), Str(r, "alias"));
    return json::object();
  });
  api("GET", "registered-models/alias",
      [store](const json& r) { return json{{"model_version", ToJson(store->GetModelVersionByAlias(Str(r, "name"), Str(r, "alias")))}}; });
  api("POST", "model-versions/create", [store](const json& r) {
    return json{{"model_version", ToJson(store->CreateModelVersion(Str(r, "name"), Str(r, "source"), Str(r, "run_id", false),
                                                                   Str(r, "description", false)))}};
  });
  api("GET", "model-versions/get",
      [store](const json& r) { return json{{"model_version", ToJson(store->GetModelVersion(Str(r, "name"), Str(r, "version")))}}; });
  Handler search_versions = [store](const json& r) {
    std::string filter = Str(r, "filter", false), name;
    if (!filter.empty()) {
      std::smatch m;
      static const std::regex by_name(R"(^\s*name\s*=\s*'([^']*)'\s*$)");
      if (!std::regex_match(filter, m, by_name)) Bad("model-versions/search filters on name only: name = 'x'");
      name = m[1].str();
    }
    return Page(store->ListModelVersions(name), r, 200000, 200000, "model_versions");
  };
  api("GET", "model-versions/search", search_versions);
  api("POST", "model-versions/search", search_versions);
  api("PATCH", "model-versions/update", [store](const json& r) {
    store->UpdateModelVersion(Str(r, "name"), Str(r, "version"), Str(r, "description", false));
    return json{{"model_version", ToJson(store->GetModelVersion(Str(r, "name"), Str(r, "version")))}};
  });
  api("DELETE", "model-versions/delete", [store](const json& r) {
    store->DeleteModelVersion(Str(r, "name"), Str(r, "version"));
    return json::object();
  });
  api("GET", "model-versions/get-download-uri",
      [store](const json& r) { return json{{"artifact_uri", store->GetModelVersion(Str(r, "name"), Str(r, "version")).source}}; });

  // The mlflow-artifacts proxy: files under the artifact root, by their path there
  // (<experiment>/<run>/artifacts/...). Paths may not leave the root: no absolute paths, no '..',
  // no symlinks that lead out.
  auto artifact = [store, o](const httplib::Request& req, httplib::Response& res) {
    auto fail = [&res](int status, const std::string& code, const std::string& message) {
      res.status = status;
      res.set_content(json{{"error_code", code}, {"message", message}}.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    };
    if (!o.auth_token.empty() && req.get_header_value("Authorization") != "Bearer " + o.auth_token) {
      return fail(401, "UNAUTHENTICATED", "a valid bearer token is required");
    }
    const std::string rel = req.matches[1];
    if (rel.empty()) return fail(400, "INVALID_PARAMETER_VALUE", "no artifact path");
    std::error_code ec;
    fs::create_directories(store->artifact_root(), ec);
    fs::path target;
    try {
      target = Inside(store->artifact_root(), rel);
    } catch (const ApiError& e) {
      return fail(e.status, e.code, e.message);
    }
    try {
      if (req.method == "PUT") {
        fs::create_directories(target.parent_path());
        WriteFileAtomically(target.string(), req.body);
        res.set_content("{}", "application/json");
        return;
      }
      if (!fs::is_regular_file(target, ec)) return fail(404, "RESOURCE_DOES_NOT_EXIST", "no artifact file '" + rel + "'");
      std::vector<uint8_t> bytes = ReadFile(target.string());
      res.set_content(std::string(bytes.begin(), bytes.end()), "application/octet-stream");
    } catch (const std::exception& e) {
      fail(500, "INTERNAL_ERROR", e.what());
    }
  };
  s.Get(R"(/api/2.0/mlflow-artifacts/artifacts/(.*))", artifact);
  s.Put(R"(/api/2.0/mlflow-artifacts/artifacts/(.*))", artifact);

  // The web UI: a static page (no data in it; its API calls carry the token when one is set).
  s.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(UiPage(), "text/html; charset=utf-8"); });

  // Anything else under the API is MLflow's ENDPOINT_NOT_FOUND.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) {
      res.set_content(json{{"error_code", "ENDPOINT_NOT_FOUND"}, {"message", "no endpoint " + req.method + " " + req.path}}.dump(),
                      "application/json");
    } else if (res.status == 413) {
      res.status = 400;
      res.set_content(json{{"error_code", "INVALID_PARAMETER_VALUE"}, {"message", "the request body is too large"}}.dump(),
                      "application/json");
    }
  });
}

}  // namespace shoal::track
