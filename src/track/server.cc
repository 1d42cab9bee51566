#include "track/server.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>

#include "track/mlflow_json.h"
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

int64_t Int(const json& req, const char* key, int64_t fallback) {
  auto it = req.find(key);
  if (it == req.end() || it->is_null()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {  // GET query parameters arrive as text
    try {
      size_t used = 0;
      int64_t v = std::stoll(it->get<std::string>(), &used);
      if (used == it->get<std::string>().size()) return v;
    } catch (const std::exception&) {
    }
  }
  Bad(std::string("Invalid value for parameter '") + key + "': expected an integer, got " + it->dump());
}

double Number(const json& v, const std::string& what) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "NaN") return NAN;
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
  }
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

// ---- runs/search filters: clauses joined by AND ----

struct Clause {
  std::string kind;  // metrics, params, tags, attributes
  std::string key;
  std::string op;
  std::string text;
  double number = 0;
  bool numeric = false;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<Clause> ParseFilter(const std::string& filter) {
  std::vector<Clause> out;
  size_t i = 0;
  auto skip = [&] {
    while (i < filter.size() && std::isspace(static_cast<unsigned char>(filter[i]))) ++i;
  };
  auto quoted = [&](char q) {
    size_t end = filter.find(q, i + 1);
    if (end == std::string::npos) Bad("filter '" + filter + "': unclosed " + std::string(1, q));
    std::string s = filter.substr(i + 1, end - i - 1);
    i = end + 1;
    return s;
  };
  while (true) {
    skip();
    if (i >= filter.size()) break;
    Clause c;
    size_t dot = filter.find('.', i);
    if (dot == std::string::npos) Bad("filter '" + filter + "': expected metrics.KEY, params.KEY, tags.KEY or attributes.KEY");
    std::string kind = Lower(filter.substr(i, dot - i));
    if (kind == "metric") kind = "metrics";
    if (kind == "param") kind = "params";
    if (kind == "tag") kind = "tags";
    if (kind == "attribute" || kind == "run") kind = "attributes";
    if (kind != "metrics" && kind != "params" && kind != "tags" && kind != "attributes") {
      Bad("filter '" + filter + "': unknown entity '" + kind + "' (metrics, params, tags, attributes)");
    }
    c.kind = kind;
    i = dot + 1;
    if (i < filter.size() && (filter[i] == '"' || filter[i] == '`' || filter[i] == '\'')) {
      c.key = quoted(filter[i]);
    } else {
      size_t start = i;
      while (i < filter.size() && !std::isspace(static_cast<unsigned char>(filter[i])) && std::string("<>=!").find(filter[i]) == std::string::npos) ++i;
      c.key = filter.substr(start, i - start);
    }
    if (c.key.empty()) Bad("filter '" + filter + "': an empty key");
    skip();
    for (const char* op : {"!=", ">=", "<=", "=", ">", "<"}) {
      if (filter.compare(i, std::strlen(op), op) == 0) {
        c.op = op;
        i += std::strlen(op);
        break;
      }
    }
    if (c.op.empty()) {
      size_t start = i;
      while (i < filter.size() && std::isalpha(static_cast<unsigned char>(filter[i]))) ++i;
      c.op = Lower(filter.substr(start, i - start));
      if (c.op != "like" && c.op != "ilike") Bad("filter '" + filter + "': expected a comparison after '" + c.key + "'");
    }
    skip();
    if (i < filter.size() && (filter[i] == '\'' || filter[i] == '"')) {
      c.text = quoted(filter[i]);
    } else {
      size_t start = i;
      while (i < filter.size() && !std::isspace(static_cast<unsigned char>(filter[i]))) ++i;
      std::string token = filter.substr(start, i - start);
      char* end = nullptr;
      c.number = std::strtod(token.c_str(), &end);
      if (token.empty() || *end != '\0') Bad("filter '" + filter + "': '" + token + "' is neither a number nor a quoted string");
      c.numeric = true;
      c.text = token;
    }
    if (c.kind == "metrics" && !c.numeric) Bad("filter '" + filter + "': metrics compare with numbers");
    out.push_back(c);
    skip();
    if (i >= filter.size()) break;
    if (Lower(filter.substr(i, 3)) != "and") Bad("filter '" + filter + "': clauses join with AND");
    i += 3;
  }
  return out;
}

bool Like(const std::string& value, const std::string& pattern, bool fold) {
  std::string re;
  for (char c : pattern) {
    if (c == '%') {
      re += ".*";
    } else if (c == '_') {
      re += '.';
    } else {
      if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) re += '\\';
      re += c;
    }
  }
  return std::regex_match(value, std::regex(re, fold ? std::regex::icase : std::regex::ECMAScript));
}

bool Compare(const std::string& op, double a, double b) {
  if (op == "=") return a == b;
  if (op == "!=") return a != b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  return false;
}

bool Compare(const std::string& op, const std::string& a, const std::string& b) {
  if (op == "like") return Like(a, b, false);
  if (op == "ilike") return Like(a, b, true);
  if (op == "=") return a == b;
  if (op == "!=") return a != b;
  Bad("strings compare with =, !=, LIKE or ILIKE, not " + op);
}

std::optional<double> MetricOf(const Run& r, const std::string& key) {
  for (const Metric& m : r.metrics) {
    if (m.key == key) return m.value;
  }
  return std::nullopt;
}

bool Matches(const Run& r, const std::vector<Clause>& clauses) {
  for (const Clause& c : clauses) {
    if (c.kind == "metrics") {
      auto v = MetricOf(r, c.key);
      if (!v || !Compare(c.op, *v, c.number)) return false;
    } else if (c.kind == "params" || c.kind == "tags") {
      const auto& m = c.kind == "params" ? r.params : r.tags;
      auto it = m.find(c.key);
      if (it == m.end() || !Compare(c.op, it->second, c.text)) return false;
    } else {
      const std::string k = c.key;
      if (k == "start_time" || k == "end_time") {
        if (!c.numeric) Bad("attributes." + k + " compares with a number");
        if (!Compare(c.op, static_cast<double>(k == "start_time" ? r.info.start_time : r.info.end_time), c.number)) return false;
      } else {
        std::string v = k == "status" ? r.info.status
                        : k == "run_name" ? r.info.run_name
                        : k == "run_id" ? r.info.run_id
                        : k == "user_id" ? r.info.user_id
                        : k == "artifact_uri" ? r.info.artifact_uri
                                              : (Bad("unknown attribute '" + k + "'"), "");
        if (!Compare(c.op, v, c.text)) return false;
      }
    }
  }
  return true;
}

// "metrics.val_loss DESC", "attributes.start_time", "params.lr ASC"
void Order(std::vector<Run>& runs, const std::vector<std::string>& order_by) {
  struct Key {
    std::string kind, key;
    bool desc;
  };
  std::vector<Key> keys;
  for (const std::string& o : order_by) {
    std::string s = o;
    bool desc = false;
    std::string low = Lower(s);
    if (low.size() > 5 && low.substr(low.size() - 5) == " desc") {
      desc = true;
      s = s.substr(0, s.size() - 5);
    } else if (low.size() > 4 && low.substr(low.size() - 4) == " asc") {
      s = s.substr(0, s.size() - 4);
    }
    size_t dot = s.find('.');
    if (dot == std::string::npos) Bad("order_by '" + o + "': expected metrics.KEY, params.KEY, tags.KEY or attributes.KEY");
    std::string kind = Lower(s.substr(0, dot));
    if (kind.back() != 's') kind += 's';
    std::string key = s.substr(dot + 1);
    if (!key.empty() && (key.front() == '"' || key.front() == '`')) key = key.substr(1, key.size() - 2);
    keys.push_back({kind, key, desc});
  }
  keys.push_back({"attributes", "start_time", true});
  auto value = [](const Run& r, const Key& k) -> std::pair<std::optional<double>, std::string> {
    if (k.kind == "metrics") return {MetricOf(r, k.key), ""};
    if (k.kind == "params") return {std::nullopt, r.params.count(k.key) ? r.params.at(k.key) : ""};
    if (k.kind == "tags") return {std::nullopt, r.tags.count(k.key) ? r.tags.at(k.key) : ""};
    if (k.key == "start_time") return {static_cast<double>(r.info.start_time), ""};
    if (k.key == "end_time") return {static_cast<double>(r.info.end_time), ""};
    return {std::nullopt, k.key == "run_name" ? r.info.run_name : k.key == "status" ? r.info.status : r.info.run_id};
  };
  std::stable_sort(runs.begin(), runs.end(), [&](const Run& a, const Run& b) {
    for (const Key& k : keys) {
      auto va = value(a, k), vb = value(b, k);
      if (k.kind == "metrics" || k.key == "start_time" || k.key == "end_time") {
        if (va.first.has_value() != vb.first.has_value()) return va.first.has_value();  // missing values last
        if (!va.first || *va.first == *vb.first) continue;
        return k.desc ? *va.first > *vb.first : *va.first < *vb.first;
      }
      if (va.second == vb.second) continue;
      return k.desc ? va.second > vb.second : va.second < vb.second;
    }
    return false;
  });
}

// Paging: the token is the offset of the next page.
template <typename T>
json Page(const std::vector<T>& all, const json& req, int64_t default_max, int64_t limit, const char* field) {
  const int64_t max = Int(req, "max_results", default_max);
  if (max < 1 || max > limit) Bad("max_results must be from 1 to " + std::to_string(limit));
  int64_t offset = 0;
  std::string token = Str(req, "page_token", false);
  if (!token.empty()) {
    try {
      offset = std::stoll(token);
    } catch (const std::exception&) {
      Bad("Invalid page_token '" + token + "'");
    }
    if (offset < 0) Bad("Invalid page_token '" + token + "'");
  }
  json items = json::array();
  for (int64_t k = offset; k < static_cast<int64_t>(all.size()) && k < offset + max; ++k) items.push_back(ToJson(all[k]));
  json out = {{field, items}};
  if (offset + max < static_cast<int64_t>(all.size())) out["next_page_token"] = std::to_string(offset + max);
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

}  // namespace

Server::Server(std::shared_ptr<Store> store, ServerOptions options)
    : store_(std::move(store)), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  Routes();
}

Server::~Server() { Stop(); }

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
  http_->listen_after_bind();
}

void Server::Stop() {
  if (http_) http_->stop();
}

void Server::Routes() {
  httplib::Server& s = *http_;
  s.set_payload_max_length(64 << 20);
  auto store = store_;
  const ServerOptions o = options_;

  // Every API route: auth, the request as JSON (the body for POST/PATCH/DELETE, the query for
  // GET), errors as MLflow's bodies.
  using Handler = std::function<json(const json&)>;
  auto api = [&s, o](const std::string& method, const std::string& path, Handler handler) {
    auto wrapped = [o, handler, path](const httplib::Request& req, httplib::Response& res) {
      auto reply = [&res](int status, const json& body) {
        res.status = status;
        res.set_content(body.dump(), "application/json");
      };
      try {
        if (!o.auth_token.empty() && req.get_header_value("Authorization") != "Bearer " + o.auth_token) {
          reply(401, {{"error_code", "UNAUTHENTICATED"}, {"message", "a valid bearer token is required"}});
          return;
        }
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
          if (req.body.size() > o.max_json_bytes) {
            Bad("the request body is " + std::to_string(req.body.size()) + " bytes; the limit is " + std::to_string(o.max_json_bytes));
          }
          try {
            body = json::parse(req.body);
          } catch (const json::parse_error& e) {
            Bad(std::string("malformed JSON: ") + e.what());
          }
          if (!body.is_object()) Bad("the request body must be a JSON object");
        }
        reply(200, handler(body));
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

  // ---- experiments ----
  api("POST", "experiments/create", [store](const json& r) {
    return json{{"experiment_id", store->CreateExperiment(Str(r, "name"), Str(r, "artifact_location", false), KeyValues(r, "tags"))}};
  });
  api("GET", "experiments/get", [store](const json& r) { return json{{"experiment", ToJson(store->GetExperiment(Str(r, "experiment_id")))}}; });
  api("GET", "experiments/get-by-name",
      [store](const json& r) { return json{{"experiment", ToJson(store->GetExperimentByName(Str(r, "experiment_name")))}}; });
  Handler search_experiments = [store](const json& r) {
    if (!Str(r, "filter", false).empty()) Bad("experiments/search: filter is not supported by this server");
    const View view = ViewOf(r, "view_type");
    std::vector<Experiment> all;
    for (Experiment& e : store->ListExperiments(view.include_deleted)) {
      if (view.Keeps(e.lifecycle_stage)) all.push_back(std::move(e));
    }
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
    return json{{"run", ToJson(store->GetRun(info.run_id))}};
  });
  api("POST", "runs/update", [store, run_id](const json& r) {
    std::string status = Str(r, "status", false);
    if (status.empty()) status = store->GetRun(run_id(r)).info.status;
    return json{{"run_info", ToJson(store->UpdateRun(run_id(r), status, Int(r, "end_time", 0), Str(r, "run_name", false)))}};
  });
  api("GET", "runs/get", [store, run_id](const json& r) { return json{{"run", ToJson(store->GetRun(run_id(r)))}}; });
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
  api("POST", "runs/log-batch", [store](const json& r) {
    std::vector<Metric> metrics;
    if (r.contains("metrics")) {
      if (!r["metrics"].is_array()) Bad("Invalid value for parameter 'metrics': expected a list");
      for (const json& m : r["metrics"]) {
        if (!m.is_object() || !m.contains("value")) Bad("each metric needs key, value, timestamp and step");
        metrics.push_back({Str(m, "key"), Number(m["value"], "metric value"), Int(m, "timestamp", NowMillis()), Int(m, "step", 0)});
      }
    }
    store->LogBatch(Str(r, "run_id"), metrics, KeyValues(r, "params"), KeyValues(r, "tags"));
    return json::object();
  });
  Handler search_runs = [store](const json& r) {
    std::vector<std::string> ids;
    if (r.contains("experiment_ids")) {
      const json& e = r["experiment_ids"];
      if (e.is_string()) {
        ids.push_back(e.get<std::string>());
      } else if (e.is_array()) {
        for (const json& id : e) {
          if (!id.is_string()) Bad("experiment_ids must be a list of strings");
          ids.push_back(id.get<std::string>());
        }
      } else {
        Bad("experiment_ids must be a list of strings");
      }
    }
    std::vector<Clause> clauses = ParseFilter(Str(r, "filter", false));
    const View view = ViewOf(r, "run_view_type");
    std::vector<track::Run> runs;
    for (track::Run& run : store->ListRuns(ids, view.include_deleted, 1 << 30)) {
      if (view.Keeps(run.info.lifecycle_stage) && Matches(run, clauses)) runs.push_back(std::move(run));
    }
    std::vector<std::string> order;
    if (r.contains("order_by")) {
      const json& ob = r["order_by"];
      if (ob.is_string()) {
        order.push_back(ob.get<std::string>());
      } else if (ob.is_array()) {
        for (const json& x : ob) order.push_back(x.get<std::string>());
      } else {
        Bad("order_by must be a list of strings");
      }
    }
    Order(runs, order);
    return Page(runs, r, 1000, 50000, "runs");
  };
  api("POST", "runs/search", search_runs);
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
    return json{{"root_uri", info.artifact_uri}, {"files", files}};
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
      if (!filter.empty() && !Compare(Lower(m[1].str()), model.name, m[2].str())) continue;
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
      res.set_content(json{{"error_code", code}, {"message", message}}.dump(), "application/json");
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
