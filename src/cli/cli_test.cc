// Runs the built `shoal` binary as a user would and checks the exit-status contract.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <atomic>
#include <set>
#include <thread>

#include "track/store.h"

namespace {

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result RunShoal(const std::string& args) {
  auto dir = std::filesystem::temp_directory_path();
  auto out = dir / ("shoal_cli_out_" + std::to_string(::getpid()));
  auto err = dir / ("shoal_cli_err_" + std::to_string(::getpid()));
  std::string cmd = std::string(SHOAL_BINARY) + " " + args + " >" + out.string() + " 2>" +
                    err.string() + " </dev/null";
  int raw = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = Slurp(out);
  r.err = Slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

TEST(CliTest, HelpListsTheCommandsAndExitsZero) {
  Result r = RunShoal("--help");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("version"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Exit status"), std::string::npos) << r.out;
}

TEST(CliTest, VersionPrintsShoalAndLibtorchVersions) {
  Result r = RunShoal("version");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("shoal 0."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libtorch "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cuda devices "), std::string::npos) << r.out;
}

TEST(CliTest, LaunchRunsRanksWithPrefixedOutputAndReportsAFailingRank) {
  Result ok = RunShoal("launch -np 2 -- sh -c 'echo rank $SHOAL_RANK of $SHOAL_WORLD_SIZE'");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("[0] rank 0 of 2\n"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("[1] rank 1 of 2\n"), std::string::npos) << ok.out;
  Result failed = RunShoal("launch -np 2 -- sh -c 'if [ $SHOAL_RANK = 1 ]; then exit 7; fi; exec sleep 30'");
  EXPECT_EQ(failed.status, 1);
  EXPECT_NE(failed.err.find("rank 1 exited with status 7"), std::string::npos) << failed.err;
  EXPECT_EQ(RunShoal("launch -np 2").status, 2);     // no command
  EXPECT_EQ(RunShoal("launch -np 0 -- true").status, 2);
  Result slots = RunShoal("launch -np 3 -H localhost:2 -- true");
  EXPECT_EQ(slots.status, 1);
  EXPECT_NE(slots.err.find("needs 3 slots; the hosts give 2"), std::string::npos) << slots.err;
}

TEST(CliTest, RunsAndModelsReadTheTrackingStore) {
  auto dir = std::filesystem::temp_directory_path() / ("shoal_cli_track_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::string run_id;
  {
    auto store = shoal::track::Store::Open(dir.string());
    std::string exp = store->CreateExperiment("exp");
    run_id = store->CreateRun(exp, "cli-run").run_id;
    store->LogBatch(run_id, {{"test_acc", 0.9, 1, 5}}, {{"lr", "0.1"}});
    std::filesystem::create_directories(dir / "files");
    std::ofstream(dir / "files" / "model.ckpt") << "weights";
    store->LogArtifact(run_id, (dir / "files" / "model.ckpt").string(), "model");
    store->UpdateRun(run_id, "FINISHED");
  }
  const std::string flag = " --store " + dir.string();
  Result ls = RunShoal("runs ls" + flag + " --experiment exp");
  EXPECT_EQ(ls.status, 0) << ls.err;
  EXPECT_NE(ls.out.find(run_id + "  cli-run"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("test_acc=0.9"), std::string::npos) << ls.out;
  Result kept = RunShoal("runs ls" + flag + " --filter \"metrics.test_acc > 0.8 and params.lr = '0.1'\" --order-by 'metrics.test_acc DESC'");
  EXPECT_EQ(kept.status, 0) << kept.err;
  EXPECT_NE(kept.out.find(run_id), std::string::npos) << kept.out;
  Result none = RunShoal("runs ls" + flag + " --filter 'metrics.test_acc > 0.95'");
  EXPECT_EQ(none.out.find(run_id), std::string::npos) << none.out;
  Result bad = RunShoal("runs ls" + flag + " --filter 'metrics.test_acc LIKE 1'");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("metrics compare with numbers"), std::string::npos) << bad.err;
  Result show = RunShoal("runs show " + run_id + flag);
  EXPECT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find("\"status\": \"FINISHED\""), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("\"path\": \"model/model.ckpt\""), std::string::npos) << show.out;
  Result reg = RunShoal("models register --run " + run_id + " --name m --path model/model.ckpt" + flag);
  EXPECT_EQ(reg.status, 0) << reg.err;
  EXPECT_NE(reg.out.find("\"version\":\"1\""), std::string::npos) << reg.out;
  EXPECT_EQ(RunShoal("models alias m champion 1" + flag).status, 0);
  Result models = RunShoal("models ls" + flag);
  EXPECT_NE(models.out.find("\"aliases\":[{\"alias\":\"champion\",\"version\":\"1\"}]"), std::string::npos) << models.out;
  Result missing = RunShoal("runs show nosuchrun" + flag);
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("run 'nosuchrun' does not exist"), std::string::npos) << missing.err;
  EXPECT_EQ(RunShoal("models register --run " + run_id + " --name m --path nothing" + flag).status, 1);
  EXPECT_EQ(RunShoal("models alias m latest 1" + flag).status, 1);
  std::filesystem::remove_all(dir);
}

// kill -9 of the server under load, then a restart: every metric it acknowledged is there.
TEST(CliTest, ServerKilledUnderLoadKeepsEveryAcknowledgedMetric) {
  auto dir = std::filesystem::temp_directory_path() / ("shoal_cli_server_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const int port = 20000 + ::getpid() % 20000;
  auto start = [&] {
    pid_t pid = ::fork();
    if (pid == 0) {
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 2);
      ::execl(SHOAL_BINARY, SHOAL_BINARY, "server", "--port", std::to_string(port).c_str(), "--store", dir.c_str(), nullptr);
      ::_exit(127);
    }
    httplib::Client probe("127.0.0.1", port);
    for (int i = 0; i < 200 && !probe.Get("/api/2.0/mlflow/experiments/get?experiment_id=0"); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return pid;
  };
  pid_t server = start();
  httplib::Client client("127.0.0.1", port);
  auto created = client.Post("/api/2.0/mlflow/runs/create", R"({"experiment_id": "0"})", "application/json");
  ASSERT_TRUE(created) << "the server did not start";
  const std::string run = nlohmann::json::parse(created->body)["run"]["info"]["run_id"];
  std::atomic<bool> stop{false};
  std::vector<std::set<int>> acked(4);
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", port);
      for (int step = 0; !stop; ++step) {
        nlohmann::json m = {{"run_id", run}, {"key", "k" + std::to_string(t)}, {"value", step}, {"timestamp", 1}, {"step", step}};
        auto r = c.Post("/api/2.0/mlflow/runs/log-metric", m.dump(), "application/json");
        if (!r) break;  // the server is gone
        if (r->status == 200) acked[t].insert(step);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  stop = true;
  for (auto& w : writers) w.join();
  server = start();
  size_t total = 0;
  for (int t = 0; t < 4; ++t) {
    auto r = client.Get(("/api/2.0/mlflow/metrics/get-history?run_id=" + run + "&metric_key=k" + std::to_string(t)).c_str());
    ASSERT_TRUE(r) << "the restarted server does not answer";
    std::set<int> stored;
    const nlohmann::json history = nlohmann::json::parse(r->body);
    for (const auto& m : history["metrics"]) stored.insert(m["step"].get<int>());
    size_t lost = 0;
    for (int step : acked[t]) lost += stored.count(step) == 0;
    EXPECT_EQ(lost, 0u) << lost << " of " << acked[t].size() << " acknowledged values of k" << t << " are lost; stored "
                        << stored.size() << ": " << r->body.substr(0, 300);
    total += acked[t].size();
  }
  EXPECT_GT(total, 20u) << "too little load to mean anything";
  ::kill(server, SIGTERM);
  ::waitpid(server, nullptr, 0);
  std::filesystem::remove_all(dir);
}

TEST(CliTest, UnknownCommandIsAUsageErrorOnStderrWithExitTwo) {
  Result r = RunShoal("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("shoal --help"), std::string::npos) << r.err;
}

TEST(CliTest, UnknownFlagIsAUsageErrorWithExitTwo) {
  Result r = RunShoal("version --no-such-flag");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << r.err;
}

TEST(CliTest, NoCommandIsAUsageErrorWithExitTwo) {
  Result r = RunShoal("");
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(r.err.empty());
}

std::string TestFile(const std::string& name) {
  return std::string(SHOAL_TESTDATA_DIR) + "/parquet-testing/data/" + name;
}

TEST(CliTest, CatPrintsJsonLinesWithColumnsAndLimit) {
  Result r = RunShoal("cat " + TestFile("alltypes_plain.parquet") + " --columns id,string_col --limit 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"id\":4,\"string_col\":\"MA==\"}\n{\"id\":5,\"string_col\":\"MQ==\"}\n");
}

TEST(CliTest, CatPrintsNestedValuesAndTables) {
  Result r = RunShoal("cat " + TestFile("nested_maps.snappy.parquet") + " --limit 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"a\":[{\"key\":\"a\",\"value\":[{\"key\":1,\"value\":true},{\"key\":2,", 0), 0u) << r.out;
  Result table = RunShoal("cat " + TestFile("datapage_v2.snappy.parquet") + " --format table --limit 2");
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_EQ(table.out,
            "a   | b | c | d    | e\n"
            "----+---+---+------+--------\n"
            "abc | 1 | 2 | true | [1,2,3]\n"
            "abc | 2 | 3 | true | null\n");
}

TEST(CliTest, SchemaAndParquetMetaDescribeTheFile) {
  Result schema = RunShoal("schema " + TestFile("list_columns.parquet"));
  ASSERT_EQ(schema.status, 0) << schema.err;
  EXPECT_NE(schema.out.find("optional group int64_list (LIST) {"), std::string::npos) << schema.out;
  Result meta = RunShoal("parquet-meta " + TestFile("int32_decimal.parquet"));
  ASSERT_EQ(meta.status, 0) << meta.err;
  for (const char* key : {"\"row_groups\"", "\"codec\": \"UNCOMPRESSED\"", "\"encodings\"", "\"total_compressed_size\"",
                          "\"min\": \"1.00\"", "\"max\": \"24.00\"", "\"num_rows\": 24"}) {
    EXPECT_NE(meta.out.find(key), std::string::npos) << key << " in " << meta.out;
  }
}

TEST(CliTest, WhereOnInt96TimestampsAgreesWithWhatCatPrints) {
  Result r = RunShoal("cat " + TestFile("int96_from_spark.parquet") + " --where \"a > '2024-06-01'\"");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"a\":\"9999-12-31T03:00:00\"}\n{\"a\":\"2024-12-30T23:00:00\"}\n{\"a\":\"290000-12-30T23:00:00\"}\n");
}

TEST(CliTest, ChecksumVerificationCanBeSkipped) {
  std::string file = TestFile("datapage_v1-corrupt-checksum.parquet");
  EXPECT_EQ(RunShoal("cat " + file + " --limit 1").status, 1);
  Result skipped = RunShoal("cat " + file + " --limit 1 --no-verify-checksums");
  EXPECT_EQ(skipped.status, 0) << skipped.err;
  EXPECT_EQ(skipped.out, "{\"a\":50462976,\"b\":1734763876}\n");
}

TEST(CliTest, CorruptOrMissingFilesFailWithOneLineAndExitOne) {
  Result corrupt = RunShoal("cat " + std::string(SHOAL_TESTDATA_DIR) + "/parquet-testing/bad_data/PARQUET-1481.parquet");
  EXPECT_EQ(corrupt.status, 1);
  EXPECT_EQ(std::count(corrupt.err.begin(), corrupt.err.end(), '\n'), 1) << corrupt.err;
  EXPECT_NE(corrupt.err.find("shoal: error: reading Parquet file"), std::string::npos) << corrupt.err;
  Result missing = RunShoal("cat /no/such/file.parquet");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
  Result column = RunShoal("cat " + TestFile("alltypes_plain.parquet") + " --columns nope");
  EXPECT_EQ(column.status, 1);
  EXPECT_NE(column.err.find("no column 'nope'"), std::string::npos) << column.err;
  Result format = RunShoal("cat " + TestFile("alltypes_plain.parquet") + " --format csv");
  EXPECT_EQ(format.status, 2) << format.err;
}

class CliTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("shoal_cli_table_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    for (const char* name : {"snapshot-data3", "basic-decimal-table", "no-delta-log-folder"}) {
      std::string command = std::string("tar --zstd -xf ") + SHOAL_TESTDATA_DIR + "/delta-golden/" + name +
                            ".tar.zst -C " + dir_.string();
      ASSERT_EQ(std::system(command.c_str()), 0);
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Table(const std::string& name) { return (dir_ / name / "delta").string(); }
  std::filesystem::path dir_;
};

TEST_F(CliTableTest, CatReadsTablesWithTimeTravelWhereAndColumns) {
  Result latest = RunShoal("cat " + Table("snapshot-data3") + " --limit 1");
  ASSERT_EQ(latest.status, 0) << latest.err;
  EXPECT_EQ(latest.out, "{\"col1\":0,\"col2\":\"data-2-0\"}\n");
  Result v0 = RunShoal("cat " + Table("snapshot-data3") + " --version 0 --limit 1");
  ASSERT_EQ(v0.status, 0) << v0.err;
  EXPECT_EQ(v0.out, "{\"col1\":0,\"col2\":\"data-0-0\"}\n");
  Result where = RunShoal("cat " + Table("basic-decimal-table") + " --where \"part > 1000000\" --columns col1,part");
  ASSERT_EQ(where.status, 0) << where.err;
  EXPECT_EQ(where.out, "{\"col1\":\"111.11\",\"part\":\"2342222.23454\"}\n");
  Result both = RunShoal("cat " + Table("snapshot-data3") + " --version 1 --timestamp 2020-01-01");
  EXPECT_EQ(both.status, 2) << both.err;
}

TEST_F(CliTableTest, TableInfoAndHistoryPrintJson) {
  Result info = RunShoal("table info " + Table("basic-decimal-table"));
  ASSERT_EQ(info.status, 0) << info.err;
  for (const char* key : {"\"version\": 0", "\"protocol\"", "\"features\"", "\"schema\"",
                          "\"partition_columns\": [\n    \"part\"", "\"num_files\": 4", "\"num_rows\": 4"}) {
    EXPECT_NE(info.out.find(key), std::string::npos) << key << " in " << info.out;
  }
  Result history = RunShoal("table history " + Table("snapshot-data3"));
  ASSERT_EQ(history.status, 0) << history.err;
  EXPECT_EQ(std::count(history.out.begin(), history.out.end(), '\n'), 4);
  EXPECT_NE(history.out.find("{\"version\":2,\"timestamp\":\"2020-10-26T14:52:50.832000Z\",\"operation\":\"WRITE\""),
            std::string::npos) << history.out;
}

TEST_F(CliTableTest, IngestFashionMnistCreatesATableOnce) {
  std::string table = (dir_ / "fmnist-test").string();
  Result r = RunShoal("ingest fashion-mnist --split test --out " + table + " --rows-per-file 5000");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"rows\":10000,\"files\":2"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("ingested 10000 / 10000 images"), std::string::npos) << r.err;
  Result again = RunShoal("ingest fashion-mnist --split test --out " + table);
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  Result bad = RunShoal("ingest fashion-mnist --split validation --out " + table);
  EXPECT_EQ(bad.status, 2);

  // The loader reads it: rank 1 of 3 gets ceil(10000 / 3) = 3334 rows, 4 batches an epoch.
  Result bench = RunShoal("data bench " + table + " --batch-size 1000 --epochs 2 --rank 1 --world-size 3");
  ASSERT_EQ(bench.status, 0) << bench.err;
  std::string last = bench.out.substr(bench.out.rfind('{'));
  for (const char* key : {"\"samples_per_s\":", "\"batches\":8,", "\"seconds\":", "\"samples\":6668,"}) {
    EXPECT_NE(bench.out.find(key), std::string::npos) << key << " in " << bench.out;
  }
  EXPECT_NE(bench.err.find("epoch 2: 3334 samples"), std::string::npos) << bench.err;
  std::string png = (dir_ / "grid.png").string();
  Result show = RunShoal("data show " + table + " --n 9 --flip --out " + png);
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find("\"samples\":9"), std::string::npos) << show.out;
  EXPECT_EQ(Slurp(png).substr(0, 8), "\x89PNG\r\n\x1a\n");
  // shoal train runs in shoal-torch (not built without LibTorch): one batch of each stage.
  Result train = RunShoal("train --data.root=" + dir_.string() + " --data.dataset= --data.train_table=fmnist-test" +
                          " --data.test_table=fmnist-test --data.val_where=\"id >= 9000\" --trainer.fast_dev_run=true" +
                          " --trainer.default_root_dir=" + (dir_ / "runs").string());
  if (SHOAL_WITH_TORCH) {
    ASSERT_EQ(train.status, 0) << train.err;
    EXPECT_NE(train.out.find("\"test_acc\":"), std::string::npos) << train.out;
    Result bad_key = RunShoal("train --trainer.max_epoch=3");
    EXPECT_EQ(bad_key.status, 1);
    EXPECT_NE(bad_key.err.find("unknown config key 'trainer.max_epoch'"), std::string::npos) << bad_key.err;
  } else {
    EXPECT_EQ(train.status, 1);
    EXPECT_NE(train.err.find("needs shoal-torch"), std::string::npos) << train.err;
  }
  Result no_rank = RunShoal("data bench " + table + " --rank 3 --world-size 3");
  EXPECT_EQ(no_rank.status, 1);
  EXPECT_NE(no_rank.err.find("rank 3 is outside 0..2"), std::string::npos) << no_rank.err;
}

TEST_F(CliTableTest, NotATableIsOneLineAndExitOne) {
  Result r = RunShoal("cat " + Table("no-delta-log-folder"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("is not a Delta table"), std::string::npos) << r.err;
  Result v = RunShoal("table info " + Table("snapshot-data3") + " --version 42");
  EXPECT_EQ(v.status, 1);
  EXPECT_NE(v.err.find("has no version 42 (latest is 3)"), std::string::npos) << v.err;
}

}  // namespace
