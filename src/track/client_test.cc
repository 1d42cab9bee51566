// The tracking client (Tracker over an http backend) against shoal's server in this process:
// every client operation through the REST API, and the disk spool while the server is down.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "track/backend.h"
#include "track/server.h"
#include "track/tracker.h"
#include "util/error.h"

namespace shoal::track {
namespace {

namespace fs = std::filesystem;

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("shoal_client_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    store_ = std::shared_ptr<Store>(Store::Open((dir_ / "server").string()));
    StartServer(0);
  }
  void TearDown() override {
    StopServer();
    fs::remove_all(dir_);
  }
  void StartServer(int port) {
    ServerOptions o;
    o.port = port;
    o.auth_token = "t0ken";
    server_ = std::make_unique<Server>(store_, o);
    port_ = server_->Bind();
    thread_ = std::thread([this] { server_->Run(); });
  }
  void StopServer() {
    if (!server_) return;
    server_->Stop();
    thread_.join();
    server_.reset();
  }
  std::string Uri() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::shared_ptr<Backend> Remote(const std::string& token = "t0ken") {
    BackendOptions o;
    o.token = token;
    o.timeout_s = 5;
    return OpenBackend(Uri(), o);
  }

  fs::path dir_;
  std::shared_ptr<Store> store_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(ClientTest, EveryClientOperationThroughTheRestApi) {
  fs::create_directories(dir_ / "model");
  std::ofstream(dir_ / "model" / "weights.bin") << "weights";
  std::ofstream(dir_ / "model" / "MLmodel") << "flavor: shoal";
  std::ofstream(dir_ / "notes.txt") << "hello";
  std::string run, version;
  {
    Tracker tracker(Remote());
    run = tracker.StartRun("remote-exp", "r1", {{"origin", "client_test"}});
    tracker.LogParams({{"lr", "0.1"}, {"optimizer", "adam"}});
    tracker.SetTags({{"phase", "fit"}});
    for (int i = 0; i < 2500; ++i) tracker.LogMetric("loss", 1.0 / (i + 1), i);
    tracker.LogMetric("odd", NAN, 0);
    tracker.LogMetric("odd", INFINITY, 1);
    const std::string file_uri = tracker.LogArtifact((dir_ / "notes.txt").string());
    EXPECT_EQ(file_uri.rfind("mlflow-artifacts:/", 0), 0u) << file_uri;
    const std::string model_uri = tracker.LogArtifact((dir_ / "model").string(), "export");
    ModelVersion v = tracker.RegisterModel("remote-model", model_uri);
    version = v.version;
    EXPECT_EQ(version, "1");
    tracker.SetAlias("remote-model", "champion", version);
    EXPECT_EQ(tracker.GetRun().params.at("optimizer"), "adam");
    // The server's own refusals come back with their category: params are immutable.
    try {
      tracker.LogParams({{"lr", "0.2"}});
      ADD_FAILURE() << "a changed param was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalid);
      EXPECT_NE(std::string(e.what()).find("lr"), std::string::npos) << e.what();
    }
    tracker.EndRun();
  }
  const track::Run r = store_->GetRun(run);
  EXPECT_EQ(r.info.status, "FINISHED");
  EXPECT_GT(r.info.end_time, 0);
  EXPECT_EQ(store_->GetExperiment(r.info.experiment_id).name, "remote-exp");
  EXPECT_EQ(r.tags.at("origin"), "client_test");
  EXPECT_EQ(r.tags.at("phase"), "fit");
  EXPECT_EQ(store_->GetMetricHistory(run, "loss").size(), 2500u);
  const std::vector<Metric> odd = store_->GetMetricHistory(run, "odd");
  ASSERT_EQ(odd.size(), 2u);
  EXPECT_TRUE(std::isnan(odd[0].value));
  EXPECT_TRUE(std::isinf(odd[1].value));
  const fs::path artifacts(r.info.artifact_uri);
  EXPECT_TRUE(fs::exists(artifacts / "notes.txt"));
  EXPECT_TRUE(fs::exists(artifacts / "export" / "model" / "weights.bin"));
  EXPECT_TRUE(fs::exists(artifacts / "export" / "model" / "MLmodel"));
  EXPECT_EQ(store_->GetModelVersionByAlias("remote-model", "champion").version, version);

  // A wrong token is refused with a message that says so.
  try {
    Tracker bad(Remote("wrong"));
    bad.StartRun("x");
    ADD_FAILURE() << "a wrong token was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token"), std::string::npos) << e.what();
  }
}

TEST_F(ClientTest, SpoolsWhileTheServerIsDownAndSendsWhenItIsBack) {
  TrackerOptions o;
  o.spool_dir = (dir_ / "spool").string();
  o.retry_max_s = 0.2;
  Tracker tracker(Remote(), o);
  const std::string run = tracker.StartRun("spool-exp");
  tracker.LogMetric("loss", 1.0, 0);
  tracker.Flush();
  const int port = port_;
  StopServer();
  for (int i = 1; i <= 3000; ++i) tracker.LogMetric("loss", 1.0 / i, i);
  tracker.LogParams({{"lr", "0.1"}});
  tracker.SetTags({{"while", "down"}});
  // Every write reaches the disk while the server is down.
  for (int k = 0; k < 100 && tracker.spooled() < 5; ++k) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(tracker.spooled(), 5u);  // 3 metric batches (at least), the param, the tag
  EXPECT_FALSE(fs::is_empty(dir_ / "spool"));
  StartServer(port);
  tracker.Flush();
  EXPECT_EQ(tracker.spooled(), 0u);
  tracker.EndRun();
  const track::Run r = store_->GetRun(run);
  EXPECT_EQ(r.info.status, "FINISHED");
  EXPECT_EQ(r.params.at("lr"), "0.1");
  EXPECT_EQ(r.tags.at("while"), "down");
  EXPECT_EQ(store_->GetMetricHistory(run, "loss").size(), 3001u);
  EXPECT_TRUE(fs::is_empty(dir_ / "spool"));  // sent records leave no files behind
}

TEST_F(ClientTest, WhatAnEndedProcessSpooledTheNextTrackerSends) {
  TrackerOptions o;
  o.spool_dir = (dir_ / "spool").string();
  o.flush_timeout_s = 0.3;
  std::string run;
  const int port = port_;
  {
    Tracker tracker(Remote(), o);
    run = tracker.StartRun("spool-exp");
    StopServer();
    for (int i = 0; i < 1500; ++i) tracker.LogMetric("acc", i * 1e-3, i);
    tracker.EndRun();  // the server stays down: the records and the status stay on disk
    EXPECT_GE(tracker.spooled(), 3u);
  }
  EXPECT_FALSE(fs::is_empty(dir_ / "spool"));
  EXPECT_EQ(store_->GetRun(run).info.status, "RUNNING");
  StartServer(port);
  {
    o.flush_timeout_s = 60;  // Flush returns as soon as the spool is empty
    Tracker next(Remote(), o);
    next.Flush();
    EXPECT_EQ(next.spooled(), 0u);
  }
  EXPECT_EQ(store_->GetRun(run).info.status, "FINISHED");
  EXPECT_EQ(store_->GetMetricHistory(run, "acc").size(), 1500u);
}

TEST_F(ClientTest, WithoutASpoolAnUnreachableServerIsAClearError) {
  const std::string uri = Uri();
  StopServer();
  try {
    Tracker tracker(OpenBackend(uri));
    tracker.StartRun("x");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find(uri), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shoal::track
