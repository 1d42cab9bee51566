// The MLflow REST API through plain HTTP (cpp-httplib's client).
#include "track/server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace shoal::track {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("shoal_server_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    store_ = std::shared_ptr<Store>(Store::Open(dir_.string()));
    ServerOptions o;
    o.port = 0;
    o.auth_token = token_;
    server_ = std::make_unique<Server>(store_, o);
    port_ = server_->Bind();
    thread_ = std::thread([this] { server_->Run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_bearer_token_auth(token_.c_str());
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
    fs::remove_all(dir_);
  }

  struct Reply {
    int status;
    json body;
  };
  Reply Post(const std::string& path, const std::string& body) {
    auto r = client_->Post(("/api/2.0/mlflow/" + path).c_str(), body, "application/json");
    if (!r) return {-1, nullptr};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  Reply Post(const std::string& path, const json& body) { return Post(path, body.dump()); }
  Reply Get(const std::string& path) {
    auto r = client_->Get(("/api/2.0/mlflow/" + path).c_str());
    if (!r) return {-1, nullptr};
    return {r->status, json::parse(r->body, nullptr, false)};
  }

  const std::string token_ = "s3cret";
  fs::path dir_;
  std::shared_ptr<Store> store_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(ServerTest, ExperimentsRunsMetricsAndSearch) {
  Reply e = Post("experiments/create", json{{"name", "exp"}, {"tags", {{{"key", "team"}, {"value", "vision"}}}}});
  ASSERT_EQ(e.status, 200) << e.body;
  const std::string exp = e.body["experiment_id"];
  EXPECT_EQ(Get("experiments/get-by-name?experiment_name=exp").body["experiment"]["tags"][0]["value"], "vision");
  Reply dup = Post("experiments/create", json{{"name", "exp"}});
  EXPECT_EQ(dup.status, 400);
  EXPECT_EQ(dup.body["error_code"], "RESOURCE_ALREADY_EXISTS");
  EXPECT_EQ(Get("experiments/get?experiment_id=99").status, 404);
  EXPECT_EQ(Get("experiments/get?experiment_id=99").body["error_code"], "RESOURCE_DOES_NOT_EXIST");
  {
    const std::string other = Post("experiments/create", json{{"name", "Exp-two"}}).body["experiment_id"];
    auto names = [&](const json& req) {
      std::vector<std::string> out;
      Reply r = Post("experiments/search", req);
      EXPECT_EQ(r.status, 200) << r.body;
      for (const json& x : r.body["experiments"]) out.push_back(x["name"]);
      return out;
    };
    using V = std::vector<std::string>;
    EXPECT_EQ(names(json{{"filter", "tags.team = 'vision'"}}), (V{"exp"}));
    EXPECT_EQ(names(json{{"filter", "name ILIKE 'exp%'"}, {"order_by", {"name DESC"}}}), (V{"exp", "Exp-two"}));
    EXPECT_EQ(names(json{{"filter", "attributes.name LIKE 'exp%'"}}), (V{"exp"}));
    EXPECT_EQ(Post("experiments/search", json{{"filter", "metrics.x > 1"}}).status, 400);
    EXPECT_EQ(Post("experiments/update", json{{"experiment_id", other}, {"new_name", "renamed"}}).status, 200);
    EXPECT_EQ(Post("experiments/delete", json{{"experiment_id", other}}).status, 200);
    EXPECT_EQ(names(json{{"view_type", "DELETED_ONLY"}}), (V{"renamed"}));
    EXPECT_EQ(Post("experiments/restore", json{{"experiment_id", other}}).status, 200);
    EXPECT_EQ(names(json{{"filter", "name = 'renamed'"}}), (V{"renamed"}));
  }

  std::vector<std::string> runs;
  for (int k = 0; k < 3; ++k) {
    Reply r = Post("runs/create", json{{"experiment_id", exp}, {"run_name", "r" + std::to_string(k)}, {"start_time", 1000 + k}});
    ASSERT_EQ(r.status, 200) << r.body;
    runs.push_back(r.body["run"]["info"]["run_id"]);
    json batch = {{"run_id", runs.back()},
                  {"metrics", {{{"key", "val_loss"}, {"value", 1.0 - 0.1 * k}, {"timestamp", 5}, {"step", 1}}}},
                  {"params", {{{"key", "lr"}, {"value", k == 2 ? "0.1" : "0.01"}}}},
                  {"tags", {{{"key", "kind"}, {"value", "cnn"}}}}};
    ASSERT_EQ(Post("runs/log-batch", batch).status, 200);
  }
  ASSERT_EQ(Post("runs/log-metric", json{{"run_id", runs[0]}, {"key", "val_loss"}, {"value", 0.95}, {"timestamp", 6}, {"step", 2}}).status, 200);
  Reply history = Get("metrics/get-history?run_id=" + runs[0] + "&metric_key=val_loss");
  ASSERT_EQ(history.body["metrics"].size(), 2u);
  EXPECT_EQ(history.body["metrics"][1]["step"], 2);

  Reply found = Post("runs/search", json{{"experiment_ids", {exp}}, {"filter", "metrics.val_loss < 0.92 and params.lr = '0.01'"}});
  ASSERT_EQ(found.status, 200) << found.body;
  ASSERT_EQ(found.body["runs"].size(), 1u);
  EXPECT_EQ(found.body["runs"][0]["info"]["run_name"], "r1");
  Reply ordered = Post("runs/search", json{{"experiment_ids", {exp}}, {"order_by", {"metrics.val_loss ASC"}}, {"max_results", 2}});
  ASSERT_EQ(ordered.body["runs"].size(), 2u);
  EXPECT_EQ(ordered.body["runs"][0]["info"]["run_name"], "r2");
  ASSERT_TRUE(ordered.body.contains("next_page_token"));
  Reply next = Post("runs/search", json{{"experiment_ids", {exp}}, {"order_by", {"metrics.val_loss ASC"}}, {"max_results", 2},
                                        {"page_token", ordered.body["next_page_token"]}});
  ASSERT_EQ(next.body["runs"].size(), 1u);
  EXPECT_EQ(next.body["runs"][0]["info"]["run_name"], "r0");
  EXPECT_EQ(Post("runs/search", json{{"filter", "metrics.val_loss < 'x'"}}).status, 400);
  EXPECT_EQ(Post("runs/search", json{{"filter", "attributes.status = 'RUNNING' and tags.kind LIKE 'c%'"}}).body["runs"].size(), 3u);

  // Params are immutable; tags are not.
  Reply changed = Post("runs/log-parameter", json{{"run_id", runs[0]}, {"key", "lr"}, {"value", "9"}});
  EXPECT_EQ(changed.status, 400);
  EXPECT_EQ(changed.body["error_code"], "INVALID_PARAMETER_VALUE");
  EXPECT_EQ(Post("runs/set-tag", json{{"run_id", runs[0]}, {"key", "kind"}, {"value", "mlp"}}).status, 200);
  Reply updated = Post("runs/update", json{{"run_id", runs[0]}, {"status", "FINISHED"}, {"end_time", 2000}});
  EXPECT_EQ(updated.body["run_info"]["status"], "FINISHED");
  EXPECT_EQ(Post("runs/delete", json{{"run_id", runs[1]}}).status, 200);
  EXPECT_EQ(Post("runs/search", json{{"experiment_ids", {exp}}}).body["runs"].size(), 2u);
  EXPECT_EQ(Post("runs/search", json{{"experiment_ids", {exp}}, {"run_view_type", "DELETED_ONLY"}}).body["runs"].size(), 1u);
}

TEST_F(ServerTest, MalformedRequestsAre400NeverACrash) {
  EXPECT_EQ(Post("experiments/create", std::string("{not json")).status, 400);
  EXPECT_EQ(Post("experiments/create", std::string("[1, 2]")).status, 400);
  EXPECT_EQ(Post("experiments/create", json{{"name", 5}}).status, 400);
  EXPECT_EQ(Post("experiments/create", json::object()).status, 400);
  EXPECT_EQ(Post("runs/log-metric", json{{"run_id", "x"}, {"key", "k"}, {"value", "high"}}).status, 400);
  EXPECT_EQ(Post("runs/log-batch", json{{"run_id", "x"}, {"metrics", 7}}).status, 400);
  std::string run = Post("runs/create", json{{"experiment_id", "0"}}).body["run"]["info"]["run_id"];
  json many = {{"run_id", run}, {"metrics", json::array()}};
  for (int i = 0; i < 1001; ++i) many["metrics"].push_back({{"key", "m"}, {"value", i}, {"timestamp", 1}, {"step", i}});
  EXPECT_EQ(Post("runs/log-batch", many).status, 400);
  EXPECT_EQ(Post("runs/log-parameter", json{{"run_id", run}, {"key", std::string(251, 'k')}, {"value", "v"}}).status, 400);
  EXPECT_EQ(Post("runs/log-parameter", json{{"run_id", run}, {"key", "k"}, {"value", std::string(6001, 'v')}}).status, 400);
  Reply big = Post("runs/set-tag", json{{"run_id", run}, {"key", "k"}, {"value", std::string(2 << 20, 'v')}});
  EXPECT_EQ(big.status, 400);
  EXPECT_EQ(Get("runs/get?run_id=nope").status, 404);
  EXPECT_EQ(Get("no/such/endpoint").body["error_code"], "ENDPOINT_NOT_FOUND");
  // Without the token: 401.
  httplib::Client anonymous("127.0.0.1", port_);
  auto r = anonymous.Get("/api/2.0/mlflow/experiments/get?experiment_id=0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
}

TEST_F(ServerTest, LogBatchReadsItsBodyAsAStreamWithTheSameRules) {
  const std::string run = Post("runs/create", json{{"experiment_id", "0"}}).body["run"]["info"]["run_id"];
  // Fields that are not ours are skipped, however nested; run_uuid stands for run_id; int64
  // fields may be strings; NaN and infinities come as strings.
  std::string body = R"({"extra": {"a": [1, {"b": [2, 3]}], "c": null}, "run_uuid": ")";
  body += run;
  body += R"(",
    "metrics": [{"key": "m", "value": 1.5, "timestamp": "7", "step": "2", "note": [1, 2]},
                {"key": "m", "value": "NaN", "timestamp": 8, "step": 3},
                {"key": "inf", "value": "-Infinity", "step": 1}],
    "params": [{"key": "p", "value": "v"}], "tags": [{"key": "t", "value": ""}], "more": [[{}]]})";
  std::string truncated = R"({"run_id": ")";
  truncated += run;
  truncated += R"(", "metrics": [{"key": "m", )";
  ASSERT_EQ(Post("runs/log-batch", body).status, 200) << Post("runs/log-batch", body).body;
  const std::vector<Metric> m = store_->GetMetricHistory(run, "m");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].timestamp, 7);
  EXPECT_EQ(m[0].step, 2);
  EXPECT_TRUE(std::isnan(m[1].value));
  EXPECT_TRUE(std::isinf(store_->GetMetricHistory(run, "inf")[0].value));
  EXPECT_GT(store_->GetMetricHistory(run, "inf")[0].timestamp, 0);  // now, when missing
  EXPECT_EQ(store_->GetRun(run).params.at("p"), "v");
  EXPECT_EQ(store_->GetRun(run).tags.at("t"), "");
  for (const std::string& bad : std::vector<std::string>{
           R"({"run_id": 5})", R"({"metrics": []})", "[]", "7", "", R"({"run_id": "r", "metrics": {}})",
           R"({"run_id": "r", "metrics": [7]})", R"({"run_id": "r", "metrics": [{"key": "m", "value": {"x": 1}}]})",
           R"({"run_id": "r", "metrics": [{"key": "m"}]})", R"({"run_id": "r", "metrics": [{"value": 1}]})",
           R"({"run_id": "r", "metrics": [{"key": "m", "value": "high"}]})",
           R"({"run_id": "r", "metrics": [{"key": "m", "value": 1, "step": 1.5}]})", R"({"run_id": "r", "params": [{"key": 1}]})",
           R"({"run_id": "r", "params": [[1]]})", R"({"run_id": "r", "tags": "x"})", truncated}) {
    Reply r = Post("runs/log-batch", bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.body["error_code"], "INVALID_PARAMETER_VALUE") << bad;
  }
  // Mutated bodies: 200 or 400, never a 500 or a crash.
  std::mt19937 random(5);
  for (int k = 0; k < 1500; ++k) {
    std::string mutated = body;
    for (int n = 1 + static_cast<int>(random() % 4); n > 0; --n) {
      const size_t at = random() % mutated.size();
      switch (random() % 3) {
        case 0: mutated[at] = static_cast<char>(random() % 256); break;
        case 1: mutated.erase(at, 1 + random() % 8); break;
        default: mutated.insert(at, 1, "{}[]\",:0-e\\"[random() % 12]); break;
      }
      if (mutated.empty()) mutated = "{";
    }
    const Reply reply = Post("runs/log-batch", mutated);
    ASSERT_TRUE(reply.status == 200 || reply.status == 400 || reply.status == 404) << reply.status << " " << reply.body << " for " << mutated;
  }
}

TEST_F(ServerTest, RegistryAndArtifacts) {
  std::string run = Post("runs/create", json{{"experiment_id", "0"}}).body["run"]["info"]["run_id"];
  std::ofstream(dir_ / "weights.ckpt") << "w";
  store_->LogArtifact(run, (dir_ / "weights.ckpt").string(), "model");
  Reply list = Get("artifacts/list?run_id=" + run);
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.body["files"][0]["path"], "model");
  EXPECT_EQ(list.body["files"][0]["is_dir"], true);
  EXPECT_EQ(Get("artifacts/list?run_id=" + run + "&path=model").body["files"][0]["file_size"], 1);
  EXPECT_EQ(Get("artifacts/list?run_id=" + run + "&path=../..").status, 400);
  EXPECT_EQ(Get("artifacts/list?run_id=" + run + "&path=/etc").status, 400);
  fs::create_symlink("/etc", fs::path(store_->GetRun(run).info.artifact_uri) / "escape");
  EXPECT_EQ(Get("artifacts/list?run_id=" + run + "&path=escape").status, 400);

  ASSERT_EQ(Post("registered-models/create", json{{"name", "m"}}).status, 200);
  Reply v = Post("model-versions/create", json{{"name", "m"}, {"source", "/x/model"}, {"run_id", run}});
  ASSERT_EQ(v.status, 200) << v.body;
  EXPECT_EQ(v.body["model_version"]["version"], "1");
  ASSERT_EQ(Post("registered-models/alias", json{{"name", "m"}, {"alias", "champion"}, {"version", "1"}}).status, 200);
  EXPECT_EQ(Get("registered-models/alias?name=m&alias=champion").body["model_version"]["source"], "/x/model");
  EXPECT_EQ(Get("model-versions/get-download-uri?name=m&version=1").body["artifact_uri"], "/x/model");
  EXPECT_EQ(Get("registered-models/search?filter=name%20LIKE%20%27m%25%27").body["registered_models"].size(), 1u);
  Reply renamed = Post("registered-models/rename", json{{"name", "m"}, {"new_name", "m2"}});
  ASSERT_EQ(renamed.status, 200) << renamed.body;
  EXPECT_EQ(renamed.body["registered_model"]["aliases"][0]["alias"], "champion");
  EXPECT_EQ(Get("model-versions/get?name=m&version=1").status, 404);
  auto del = client_->Delete("/api/2.0/mlflow/registered-models/delete", json{{"name", "m2"}}.dump(), "application/json");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  EXPECT_EQ(Get("registered-models/get?name=m2").status, 404);
}

TEST_F(ServerTest, ArtifactProxyPutsAndGetsFilesInsideTheRootOnly) {
  std::string run = Post("runs/create", json{{"experiment_id", "0"}}).body["run"]["info"]["run_id"];
  const std::string base = "/api/2.0/mlflow-artifacts/artifacts/0/" + run + "/artifacts/";
  auto put = client_->Put((base + "model/weights.bin").c_str(), std::string("abc\0def", 7), "application/octet-stream");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200) << put->body;
  auto got = client_->Get((base + "model/weights.bin").c_str());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->body, std::string("abc\0def", 7));
  EXPECT_EQ(Get("artifacts/list?run_id=" + run + "&path=model").body["files"][0]["file_size"], 7);  // the run sees it
  EXPECT_EQ(client_->Get((base + "missing").c_str())->status, 404);
  EXPECT_EQ(client_->Get("/api/2.0/mlflow-artifacts/artifacts/0/../../etc/passwd")->status, 400);
  EXPECT_EQ(client_->Put("/api/2.0/mlflow-artifacts/artifacts/%2Fetc%2Fx", "x", "text/plain")->status, 400);
  fs::create_symlink("/etc", fs::path(store_->artifact_root()) / "out");
  EXPECT_EQ(client_->Get("/api/2.0/mlflow-artifacts/artifacts/out/passwd")->status, 400);
  EXPECT_EQ(client_->Put("/api/2.0/mlflow-artifacts/artifacts/out/x", "x", "text/plain")->status, 400);
  httplib::Client anonymous("127.0.0.1", port_);
  EXPECT_EQ(anonymous.Get((base + "model/weights.bin").c_str())->status, 401);
}

TEST_F(ServerTest, ConcurrentWritersLoseNothing) {
  std::string run = Post("runs/create", json{{"experiment_id", "0"}}).body["run"]["info"]["run_id"];
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", port_);
      c.set_bearer_token_auth(token_.c_str());
      for (int i = 0; i < 50; ++i) {
        json m = {{"run_id", run}, {"key", "k" + std::to_string(t)}, {"value", i}, {"timestamp", 1}, {"step", i}};
        c.Post("/api/2.0/mlflow/runs/log-metric", m.dump(), "application/json");
      }
    });
  }
  for (auto& w : writers) w.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(store_->GetMetricHistory(run, "k" + std::to_string(t)).size(), 50u);
}

}  // namespace
}  // namespace shoal::track
