#include "track/mlruns.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace shoal::track {
namespace {

namespace fs = std::filesystem;

// A FileStore tree as MLflow 2.x writes it.
void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(MlrunsTest, ImportsExperimentsRunsAndTheirData) {
  fs::path dir = fs::temp_directory_path() / ("shoal_mlruns_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path exp = dir / "mlruns" / "412";
  Write(exp / "meta.yaml", "artifact_location: file:///old/mlruns/412\ncreation_time: 1700000000000\nexperiment_id: '412'\n"
                           "last_update_time: 1700000000000\nlifecycle_stage: active\nname: fashion\n");
  fs::path run = exp / "0123456789abcdef0123456789abcdef";
  Write(run / "meta.yaml", "artifact_uri: file:///old/mlruns/412/0123456789abcdef0123456789abcdef/artifacts\nend_time: 1700000005000\n"
                           "entry_point_name: ''\nexperiment_id: '412'\nlifecycle_stage: active\n"
                           "run_id: 0123456789abcdef0123456789abcdef\nrun_name: lucky-fox-7\nrun_uuid: 0123456789abcdef0123456789abcdef\n"
                           "source_name: ''\nsource_type: 4\nsource_version: ''\nstart_time: 1700000000000\nstatus: 3\ntags: []\n"
                           "user_id: alice\n");
  Write(run / "params" / "lr", "0.001");
  Write(run / "params" / "model" / "name", "cnn");
  Write(run / "tags" / "mlflow.source.type", "LOCAL");
  Write(run / "metrics" / "loss", "1700000001000 0.9 0\n1700000002000 0.5 1\n1700000003000 nan 2\n");
  Write(run / "artifacts" / "model" / "weights.bin", "w");
  Write(dir / "mlruns" / ".trash" / "x", "");
  auto store = Store::Open((dir / "store").string());
  ImportSummary s = ImportMlruns(*store, (dir / "mlruns").string());
  EXPECT_EQ(s.experiments, 1);
  EXPECT_EQ(s.runs, 1);
  EXPECT_EQ(s.metrics, 3);
  track::Run r = store->GetRun("0123456789abcdef0123456789abcdef");
  EXPECT_EQ(r.info.run_name, "lucky-fox-7");
  EXPECT_EQ(r.info.status, "FINISHED");
  EXPECT_EQ(r.info.user_id, "alice");
  EXPECT_EQ(r.info.start_time, 1700000000000);
  EXPECT_EQ(r.info.end_time, 1700000005000);
  EXPECT_EQ(store->GetExperiment(r.info.experiment_id).name, "fashion");
  EXPECT_EQ(r.params.at("lr"), "0.001");
  EXPECT_EQ(r.params.at("model/name"), "cnn");
  EXPECT_EQ(r.tags.at("mlflow.source.type"), "LOCAL");
  std::vector<Metric> loss = store->GetMetricHistory(r.info.run_id, "loss");
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_DOUBLE_EQ(loss[1].value, 0.5);
  EXPECT_TRUE(std::isnan(loss[2].value));
  EXPECT_TRUE(fs::exists(fs::path(r.info.artifact_uri) / "model" / "weights.bin"));
  // Again: the run exists, so it is skipped, not duplicated.
  ImportSummary again = ImportMlruns(*store, (dir / "mlruns").string());
  EXPECT_EQ(again.runs, 0);
  ASSERT_EQ(again.skipped.size(), 1u);
  EXPECT_EQ(store->GetMetricHistory(r.info.run_id, "loss").size(), 3u);
  EXPECT_THROW(ImportMlruns(*store, (dir / "nothing").string()), Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shoal::track
