#include "track/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace shoal::track {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("shoal_store_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(StoreTest, OpensADirectoryOrASqliteUriAndMigrates) {
  auto store = Store::Open(dir_.string());
  EXPECT_EQ(store->path(), (dir_ / "tracking.db").string());
  EXPECT_EQ(store->schema_version(), 2);
  EXPECT_EQ(store->GetExperiment("0").name, "Default");
  auto again = Store::Open("sqlite://" + (dir_ / "tracking.db").string());  // sqlite:///abs/path
  EXPECT_EQ(again->ListExperiments().size(), 1u);
  EXPECT_THROW(Store::Open("http://localhost:5000"), Error);
}

TEST_F(StoreTest, ANewerSchemaIsRefused) {
  { Store::Open(dir_.string()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "tracking.db").c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  try {
    Store::Open(dir_.string());
    FAIL() << "opened a schema from the future";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 99"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, ExperimentsAreUniqueByName) {
  auto store = Store::Open(dir_.string());
  std::string id = store->CreateExperiment("fashion", "", {{"team", "vision"}});
  EXPECT_EQ(id, "1");
  EXPECT_EQ(store->GetExperimentByName("fashion").tags.at("team"), "vision");
  EXPECT_THROW(store->CreateExperiment("fashion"), Error);
  EXPECT_EQ(store->EnsureExperiment("fashion"), id);
  store->RenameExperiment(id, "fashion2");
  EXPECT_EQ(store->GetExperiment(id).name, "fashion2");
  store->SetExperimentLifecycle(id, true);
  EXPECT_EQ(store->ListExperiments().size(), 1u);
  EXPECT_EQ(store->ListExperiments(true).size(), 2u);
  EXPECT_THROW(store->CreateRun(id), Error);  // deleted
  store->SetExperimentLifecycle(id, false);
  EXPECT_THROW(store->GetExperiment("77"), Error);
  EXPECT_THROW(store->GetExperiment("x"), Error);
}

TEST_F(StoreTest, RunsKeepParamsMetricsTagsAndTheLatestMetric) {
  auto store = Store::Open(dir_.string());
  RunInfo r = store->CreateRun("0", "first");
  EXPECT_EQ(r.run_id.size(), 32u);
  EXPECT_EQ(r.status, "RUNNING");
  store->LogBatch(r.run_id, {{"loss", 0.9, 100, 0}, {"loss", 0.5, 200, 1}, {"loss", 0.7, 150, 0}, {"acc", NAN, 100, 0}},
                  {{"lr", "0.001"}}, {{"stage", "dev"}});
  track::Run run = store->GetRun(r.run_id);
  ASSERT_EQ(run.metrics.size(), 2u);
  EXPECT_EQ(run.metrics[0].key, "acc");
  EXPECT_TRUE(std::isnan(run.metrics[0].value));
  EXPECT_EQ(run.metrics[1].key, "loss");
  EXPECT_DOUBLE_EQ(run.metrics[1].value, 0.5);  // the highest step wins, whatever the order of writes
  EXPECT_EQ(run.params.at("lr"), "0.001");
  EXPECT_EQ(run.tags.at("stage"), "dev");
  EXPECT_EQ(run.tags.at("mlflow.runName"), "first");
  std::vector<Metric> history = store->GetMetricHistory(r.run_id, "loss");
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0].step, 0);
  EXPECT_EQ(history[2].step, 1);
  // Params are immutable: the same value again is fine, another is an error; nothing of a
  // failed batch is written.
  store->LogBatch(r.run_id, {}, {{"lr", "0.001"}});
  EXPECT_THROW(store->LogBatch(r.run_id, {{"loss", 0.1, 300, 2}}, {{"lr", "0.1"}}), Error);
  EXPECT_EQ(store->GetMetricHistory(r.run_id, "loss").size(), 3u);
  store->DeleteTag(r.run_id, "stage");
  EXPECT_EQ(store->GetRun(r.run_id).tags.count("stage"), 0u);
  EXPECT_THROW(store->DeleteTag(r.run_id, "stage"), Error);
  RunInfo done = store->UpdateRun(r.run_id, "FINISHED");
  EXPECT_EQ(done.status, "FINISHED");
  EXPECT_GT(done.end_time, 0);
  EXPECT_THROW(store->UpdateRun(r.run_id, "DONE"), Error);
  EXPECT_THROW(store->GetRun("nope"), Error);
}

TEST_F(StoreTest, LimitsAsMlflow) {
  auto store = Store::Open(dir_.string());
  std::string run = store->CreateRun("0").run_id;
  EXPECT_THROW(store->LogBatch(run, {}, {{std::string(251, 'k'), "v"}}), Error);
  EXPECT_THROW(store->LogBatch(run, {}, {{"p", std::string(6001, 'v')}}), Error);
  store->LogBatch(run, {}, {{"p", std::string(6000, 'v')}});
  EXPECT_THROW(store->LogBatch(run, {{"bad\nkey", 1, 1, 0}}), Error);
  EXPECT_THROW(store->LogBatch(run, {{"../up", 1, 1, 0}}), Error);
  std::vector<Metric> many(1001, Metric{"m", 1, 1, 0});
  EXPECT_THROW(store->LogBatch(run, many), Error);
  many.resize(1000);
  for (size_t i = 0; i < many.size(); ++i) many[i].step = static_cast<int64_t>(i);
  store->LogBatch(run, many);
  EXPECT_EQ(store->GetMetricHistory(run, "m").size(), 1000u);
  // A point is (key, value, timestamp, step), as MLflow keys it: logging one again keeps one.
  store->LogBatch(run, {{"m", 1, 1, 0}, {"m", 2, 1, 0}});
  EXPECT_EQ(store->GetMetricHistory(run, "m").size(), 1001u);
}

TEST_F(StoreTest, ArtifactsAreCopiedUnderTheRunAndConfined) {
  auto store = Store::Open(dir_.string());
  RunInfo r = store->CreateRun("0");
  fs::create_directories(dir_ / "src");
  std::ofstream(dir_ / "src" / "model.ckpt") << "weights";
  std::string copied = store->LogArtifact(r.run_id, (dir_ / "src" / "model.ckpt").string(), "checkpoints");
  EXPECT_EQ(copied, (fs::path(r.artifact_uri) / "checkpoints" / "model.ckpt").string());
  EXPECT_TRUE(fs::exists(copied));
  EXPECT_THROW(store->LogArtifact(r.run_id, (dir_ / "src" / "model.ckpt").string(), "../escape"), Error);
  EXPECT_THROW(store->LogArtifact(r.run_id, (dir_ / "src" / "model.ckpt").string(), "/etc"), Error);
  EXPECT_THROW(store->LogArtifact(r.run_id, (dir_ / "missing").string()), Error);
}

TEST_F(StoreTest, ModelRegistryVersionsAndAliases) {
  auto store = Store::Open(dir_.string());
  std::string run = store->CreateRun("0").run_id;
  ModelVersion v1 = store->CreateModelVersion("fmnist", "/models/a.ckpt", run);
  ModelVersion v2 = store->CreateModelVersion("fmnist", "/models/b.ckpt", run);
  EXPECT_EQ(v1.version, "1");
  EXPECT_EQ(v2.version, "2");
  store->SetAlias("fmnist", "champion", "1");
  EXPECT_EQ(store->GetModelVersionByAlias("fmnist", "champion").source, "/models/a.ckpt");
  store->SetAlias("fmnist", "champion", "2");  // moves
  RegisteredModel m = store->GetRegisteredModel("fmnist");
  EXPECT_EQ(m.aliases.at("champion"), "2");
  ASSERT_EQ(m.latest_versions.size(), 1u);
  EXPECT_EQ(m.latest_versions[0].version, "2");
  EXPECT_EQ(m.latest_versions[0].aliases, std::vector<std::string>{"champion"});
  EXPECT_THROW(store->SetAlias("fmnist", "latest", "1"), Error);
  EXPECT_THROW(store->SetAlias("fmnist", "v3", "1"), Error);
  EXPECT_THROW(store->SetAlias("fmnist", "x", "9"), Error);
  EXPECT_THROW(store->CreateRegisteredModel("fmnist"), Error);
  store->DeleteAlias("fmnist", "champion");
  EXPECT_THROW(store->GetModelVersionByAlias("fmnist", "champion"), Error);
  EXPECT_EQ(store->ListRegisteredModels().size(), 1u);
  EXPECT_THROW(store->CreateModelVersion("fmnist", "/x", "no-such-run"), Error);
}

TEST_F(StoreTest, SearchRunsFiltersOrdersAndPagesInSql) {
  auto store = Store::Open(dir_.string());
  const std::string exp = store->CreateExperiment("search");
  const std::string other = store->CreateExperiment("other");
  // Five runs: loss 0.5, 0.4, NaN, none, 0.1; optimizer Adam/adam/sgd; started 1000..5000.
  std::vector<std::string> ids;
  const double loss[] = {0.5, 0.4, NAN, -1, 0.1};
  const char* opt[] = {"Adam", "adam", "sgd", "sgd", "adam_w"};
  for (int k = 0; k < 5; ++k) {
    ids.push_back(store->CreateRun(exp, std::to_string(k).insert(0, "run"), 1000 * (k + 1)).run_id);
    std::vector<Metric> metrics;
    if (loss[k] >= 0 || std::isnan(loss[k])) metrics.push_back({"val_loss", loss[k], 1, 1});
    store->LogBatch(ids.back(), metrics, {{"optimizer", opt[k]}}, {{"team", k % 2 ? "b" : "a"}});
  }
  store->CreateRun(other, "elsewhere", 9000);
  auto names = [&](const Store::RunSearch& q) {
    std::vector<std::string> out;
    for (const track::Run& r : store->SearchRuns(q).runs) out.push_back(r.info.run_name);
    return out;
  };
  using V = std::vector<std::string>;
  Store::RunSearch q;
  q.experiment_ids = {exp};
  EXPECT_EQ(names(q), (V{"run4", "run3", "run2", "run1", "run0"}));  // newest first
  q.filter = "metrics.val_loss < 0.45";
  EXPECT_EQ(names(q), (V{"run4", "run1"}));  // NaN and missing never match a comparison
  q.filter = "metrics.val_loss != 0.4";
  EXPECT_EQ(names(q), (V{"run4", "run2", "run0"}));  // NaN differs from everything
  q.filter = "params.optimizer LIKE 'adam%'";
  EXPECT_EQ(names(q), (V{"run4", "run1"}));  // LIKE keeps case, as MLflow's does
  q.filter = "params.optimizer ILIKE 'adam'";
  EXPECT_EQ(names(q), (V{"run1", "run0"}));
  q.filter = "params.optimizer LIKE 'adam_w'";  // '_' is one character
  EXPECT_EQ(names(q), (V{"run4"}));
  q.filter = "tags.team = 'b' and attributes.start_time >= 2000 and status = 'RUNNING'";
  EXPECT_EQ(names(q), (V{"run3", "run1"}));
  q.filter = "attributes.run_name = 'run2'";
  EXPECT_EQ(names(q), (V{"run2"}));
  q.filter = "";
  q.order_by = {"metrics.val_loss ASC"};
  EXPECT_EQ(names(q), (V{"run4", "run1", "run0", "run3", "run2"}));  // missing and NaN last, newest first
  q.order_by = {"params.optimizer DESC", "start_time ASC"};
  EXPECT_EQ(names(q), (V{"run2", "run3", "run4", "run1", "run0"}));
  q.max_results = 2;
  q.offset = 2;
  Store::RunPage page = store->SearchRuns(q);
  ASSERT_EQ(page.runs.size(), 2u);
  EXPECT_EQ(page.runs[0].info.run_name, "run4");
  EXPECT_EQ(page.next_offset, 4);
  EXPECT_EQ(page.runs[0].params.at("optimizer"), "adam_w");
  EXPECT_EQ(page.runs[0].tags.at("team"), "a");
  ASSERT_EQ(page.runs[0].metrics.size(), 1u);
  q.offset = 4;
  EXPECT_EQ(store->SearchRuns(q).next_offset, -1);

  Store::RunSearch all;
  EXPECT_EQ(store->SearchRuns(all).runs.size(), 6u);
  store->SetRunLifecycle(ids[0], true);
  all.view = "DELETED_ONLY";
  EXPECT_EQ(names(all), (V{"run0"}));
  for (const char* bad : {"metrics.val_loss LIKE 'x'", "params.lr > '1'", "attributes.colour = 'red'", "metrics.x < 1 or metrics.y < 2",
                          "start_time > 'soon'", "tags.'open = 'x'"}) {
    Store::RunSearch b;
    b.filter = bad;
    try {
      store->SearchRuns(b);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalid) << bad << ": " << e.what();
    }
  }
  Store::RunSearch b;
  b.order_by = {"colour DESC"};
  EXPECT_THROW(store->SearchRuns(b), Error);
}

TEST_F(StoreTest, SchemaOneMigratesToTwoKeepingItsData) {
  std::string run;
  {
    auto store = Store::Open(dir_.string());
    run = store->CreateRun("0", "old").run_id;
    store->LogBatch(run, {{"loss", 0.5, 1, 1}}, {{"lr", "0.1"}}, {{"team", "a"}});
  }
  // Put the tables back in schema 1's form (rowid tables with a separate key index).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "tracking.db").c_str(), &db), SQLITE_OK);
  const char* downgrade = R"sql(
    CREATE TABLE p1 (run_uuid TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_uuid, key));
    INSERT INTO p1 SELECT * FROM params; DROP TABLE params; ALTER TABLE p1 RENAME TO params;
    CREATE TABLE t1 (run_uuid TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_uuid, key));
    INSERT INTO t1 SELECT * FROM tags; DROP TABLE tags; ALTER TABLE t1 RENAME TO tags;
    CREATE TABLE l1 (run_uuid TEXT NOT NULL, key TEXT NOT NULL, value REAL NOT NULL, is_nan INTEGER NOT NULL,
      timestamp INTEGER NOT NULL, step INTEGER NOT NULL, PRIMARY KEY (run_uuid, key));
    INSERT INTO l1 SELECT * FROM latest_metrics; DROP TABLE latest_metrics; ALTER TABLE l1 RENAME TO latest_metrics;
    PRAGMA user_version = 1;)sql";
  ASSERT_EQ(sqlite3_exec(db, downgrade, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(dir_.string());
  EXPECT_EQ(store->schema_version(), 2);
  track::Run r = store->GetRun(run);
  EXPECT_EQ(r.params.at("lr"), "0.1");
  EXPECT_EQ(r.tags.at("team"), "a");
  ASSERT_EQ(r.metrics.size(), 1u);
  EXPECT_EQ(r.metrics[0].value, 0.5);
  ASSERT_EQ(sqlite3_open((dir_ / "tracking.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master WHERE sql LIKE '%WITHOUT ROWID%'", -1, &s, nullptr);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 4);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

}  // namespace
}  // namespace shoal::track
