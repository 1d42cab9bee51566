#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>
#include <fstream>

#include "data/testing.h"
#include "track/server.h"
#include "track/store.h"
#include "train/run.h"
#include "train/safetensors.h"
#include "train/schedule.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::train {
namespace {

namespace fs = std::filesystem;

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal_trainer_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    data::testing::MakeImageTable(dir_, "t", 100, 40);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An MLP with dropout on the 8x8 table: 80 rows train (10 batches an epoch), 20 validate.
  nlohmann::json Config(const std::string& run) const {
    return {
        {"model", {{"name", "mlp"}, {"hidden", {32}}, {"dropout", 0.2}}},
        {"optimizer", {{"name", "adam"}, {"lr", 0.01}}},
        {"scheduler", {{"name", "cosine"}, {"interval", "step"}, {"t_max", 30}, {"warmup", 3}}},
        {"data",
         {{"root", dir_.string()},
          {"dataset", ""},
          {"train_table", "t"},
          {"test_table", "t"},
          {"train_where", "id < 80"},
          {"val_where", "id >= 80"},
          {"batch_size", 8},
          {"threads", 1}}},
        {"trainer",
         {{"max_epochs", 3},
          {"seed", 5},
          {"num_sanity_val_steps", 0},
          {"enable_progress_bar", false},
          {"default_root_dir", (dir_ / run).string()}}},
        {"callbacks",
         {{"early_stopping", {{"enabled", false}}},
          {"model_checkpoint",
           {{"monitor", ""}, {"filename", "{step}"}, {"every_n_train_steps", 5}, {"save_top_k", -1}, {"save_last", true}}}}},
    };
  }

  static c10::Dict<c10::IValue, c10::IValue> Load(const std::string& path) {
    std::vector<uint8_t> bytes = ReadFile(path);
    return torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toGenericDict();
  }

  fs::path dir_;
};

TEST_F(TrainerTest, ResumingMidEpochEndsWithTheWeightsOfAnUninterruptedRun) {
  nlohmann::json whole = RunTrain(Config("whole"));
  EXPECT_EQ(whole["global_step"], 30);
  EXPECT_TRUE(whole.contains("test_acc"));
  // LearningRateMonitor logged the cosine schedule's rate at the last epoch's start (step 23).
  ScheduleOptions cosine;
  cosine.name = "cosine";
  cosine.t_max = 30;
  cosine.warmup = 3;
  EXPECT_NEAR(whole["lr-Adam"].get<double>(), ScheduledLr(cosine, 0.01, 20), 1e-6);  // the JSON keeps 6 decimals
  // A run stopped at step 17; its last checkpoint is from step 15, in the middle of epoch 1.
  nlohmann::json first = Config("first");
  first["trainer"]["max_steps"] = 17;
  nlohmann::json first_out = RunTrain(first);
  std::string mid = (dir_ / "first" / "checkpoints" / "last.ckpt").string();
  auto mid_ckpt = Load(mid);
  EXPECT_EQ(mid_ckpt.at("global_step").toInt(), 15);
  auto loops = mid_ckpt.at("loops").toGenericDict();
  EXPECT_EQ(loops.at("epoch").toInt(), 1);
  EXPECT_EQ(loops.at("batch_in_epoch").toInt(), 5);
  nlohmann::json resumed = Config("resumed");
  resumed["trainer"]["ckpt_path"] = mid;
  nlohmann::json out = RunTrain(resumed);
  EXPECT_EQ(out["global_step"], 30);
  EXPECT_EQ(out["run_id"], first_out["run_id"]);  // the resumed job continues its tracking run
  auto a = Load((dir_ / "whole" / "checkpoints" / "last.ckpt").string()).at("state_dict").toGenericDict();
  auto b = Load((dir_ / "resumed" / "checkpoints" / "last.ckpt").string()).at("state_dict").toGenericDict();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& entry : a) {
    at::Tensor x = entry.value().toTensor(), y = b.at(entry.key()).toTensor();
    EXPECT_TRUE(torch::allclose(x, y, 0, 1e-6)) << entry.key().toStringRef() << " differs";
  }
  EXPECT_DOUBLE_EQ(out["test_acc"].get<double>(), whole["test_acc"].get<double>());
}

TEST_F(TrainerTest, CachingTheTrainTableChangesNothingButTheWork) {
  nlohmann::json plain = Config("plain");
  plain["tracking"] = {{"enabled", false}};
  nlohmann::json cached = Config("cached");
  cached["tracking"] = {{"enabled", false}};
  cached["data"]["cache"] = true;
  cached["data"]["threads"] = 2;
  nlohmann::json a = RunTrain(plain), b = RunTrain(cached);
  EXPECT_EQ(a["train_loss"], b["train_loss"]);
  EXPECT_EQ(a["test_acc"], b["test_acc"]);
  EXPECT_EQ(a["global_step"], b["global_step"]);
}

TEST_F(TrainerTest, ARunIsTrackedAndItsModelRegistered) {
  nlohmann::json config = Config("tracked");
  config["tracking"] = {{"experiment", "tests"}, {"run_name", "mlp"}, {"register_model", "digits"}};
  nlohmann::json out = RunTrain(config);
  ASSERT_TRUE(out.contains("run_id")) << out.dump();
  EXPECT_EQ(out["model_version"], "1");
  auto store = track::Store::Open(dir_.string());
  track::Run run = store->GetRun(out["run_id"].get<std::string>());
  EXPECT_EQ(run.info.status, "FINISHED");
  EXPECT_EQ(run.info.run_name, "mlp");
  EXPECT_EQ(store->GetExperiment(run.info.experiment_id).name, "tests");
  EXPECT_EQ(run.params.at("optimizer.lr"), "0.01");
  EXPECT_EQ(run.tags.at("shoal.input.train_table"), fs::absolute(dir_ / "t").string());
  EXPECT_EQ(run.tags.at("shoal.input.train_table_version"), "0");
  EXPECT_EQ(run.tags.at("shoal.world_size"), "1");
  // One train_loss per epoch, at the epoch's last step; the test metrics at the end.
  std::vector<track::Metric> loss = store->GetMetricHistory(run.info.run_id, "train_loss");
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_EQ(loss[0].step, 10);
  EXPECT_EQ(loss[2].step, 30);
  EXPECT_NEAR(loss[2].value, out["train_loss"].get<double>(), 1e-6);  // the JSON keeps 6 decimals
  EXPECT_EQ(store->GetMetricHistory(run.info.run_id, "test_acc").size(), 1u);
  track::ModelVersion v = store->GetModelVersion("digits", "1");
  EXPECT_EQ(v.run_id, run.info.run_id);
  EXPECT_TRUE(fs::exists(v.source)) << v.source;
  EXPECT_TRUE(fs::exists(fs::path(run.info.artifact_uri) / "checkpoints" / "last.ckpt"));
  // tracking.enabled=false leaves no run.
  nlohmann::json untracked = Config("untracked");
  untracked["tracking"] = {{"enabled", false}};
  EXPECT_FALSE(RunTrain(untracked).contains("run_id"));
}

TEST_F(TrainerTest, ARunIsTrackedOnAServerOverHttp) {
  // shoal server in this process, with a token; the job reaches it through tracking.uri.
  auto server_store = std::shared_ptr<track::Store>(track::Store::Open((dir_ / "server").string()));
  track::ServerOptions so;
  so.port = 0;
  so.auth_token = "abc123";
  track::Server server(server_store, so);
  const int port = server.Bind();
  std::thread serving([&] { server.Run(); });
  WriteFileAtomically((dir_ / "token").string(), "abc123\n");
  nlohmann::json config = Config("remote");
  config["tracking"] = {{"uri", "http://127.0.0.1:" + std::to_string(port)},
                        {"token_file", (dir_ / "token").string()},
                        {"experiment", "remote"},
                        {"register_model", "digits"}};
  nlohmann::json out = RunTrain(config);
  server.Stop();
  serving.join();
  ASSERT_TRUE(out.contains("run_id")) << out.dump();
  track::Run run = server_store->GetRun(out["run_id"].get<std::string>());
  EXPECT_EQ(run.info.status, "FINISHED");
  EXPECT_EQ(server_store->GetExperiment(run.info.experiment_id).name, "remote");
  EXPECT_EQ(server_store->GetMetricHistory(run.info.run_id, "train_loss").size(), 3u);
  EXPECT_EQ(run.params.at("optimizer.lr"), "0.01");
  track::ModelVersion v = server_store->GetModelVersion("digits", "1");
  EXPECT_EQ(v.source.rfind("mlflow-artifacts:/", 0), 0u) << v.source;
  EXPECT_TRUE(fs::exists(fs::path(run.info.artifact_uri) / "checkpoints" / "last.ckpt"));
  EXPECT_TRUE(fs::exists(fs::path(run.info.artifact_uri) / "model"));
  EXPECT_FALSE(fs::exists(dir_ / "tracking.db"));  // nothing went to the local store
}

TEST_F(TrainerTest, PythonTorchLoadOpensACheckpoint) {
  nlohmann::json config = Config("py");
  config["trainer"]["max_epochs"] = 1;
  RunTrain(config);
  std::string ckpt = (dir_ / "py" / "checkpoints" / "last.ckpt").string();
  std::string script = (dir_ / "load.py").string();
  std::ofstream(script) << "import sys, torch\n"
                           "c = torch.load(sys.argv[1])\n"
                           "sd = c['state_dict']\n"
                           "assert sorted(sd) == ['layers.0.bias', 'layers.0.weight', 'layers.1.bias', 'layers.1.weight'], sorted(sd)\n"
                           "assert sd['layers.0.weight'].shape == (32, 64)\n"
                           "m = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))\n"
                           "m.load_state_dict({k.replace('layers.1', '2').replace('layers.0', '0'): v for k, v in sd.items()})\n"
                           "opt = c['optimizer_states'][0]\n"
                           "assert 0 < opt['param_groups'][0]['lr'] < 0.01 and len(opt['state']) == 4\n"
                           "s = c['lr_schedulers'][0]\n"
                           "assert s['name'] == 'cosine' and s['last_epoch'] == 10 and s['base_lrs'] == [0.01], s\n"
                           "assert 'module_state' in c\n"
                           "print(c['epoch'], c['global_step'], c['shoal_version'], c['hyper_parameters']['model.name'])\n";
  // The same weights exported to safetensors, read back by hand from the format's layout.
  std::string st = (dir_ / "py.safetensors").string();
  EXPECT_EQ(ExportSafetensors(ckpt, st), 4);
  std::ofstream(script, std::ios::app) << "import json, struct\n"
                                           "raw = open(sys.argv[2], 'rb').read()\n"
                                           "n = struct.unpack('<Q', raw[:8])[0]\n"
                                           "h = json.loads(raw[8:8 + n])\n"
                                           "for k, v in sd.items():\n"
                                           "    b, e = h[k]['data_offsets']\n"
                                           "    assert h[k]['dtype'] == 'F32' and h[k]['shape'] == list(v.shape)\n"
                                           "    t = torch.frombuffer(bytearray(raw[8 + n + b:8 + n + e]), dtype=torch.float32).reshape(v.shape)\n"
                                           "    assert torch.equal(t, v), k\n"
                                           "print('safetensors ok')\n";
  std::string out = (dir_ / "py.out").string();
  int status = std::system(("/usr/bin/python3 " + script + " " + ckpt + " " + st + " > " + out + " 2>&1").c_str());
  std::vector<uint8_t> printed = ReadFile(out);
  std::string text(printed.begin(), printed.end());
  ASSERT_EQ(status, 0) << text;
  EXPECT_NE(text.find("0 10 0.1.0 mlp"), std::string::npos) << text;
  EXPECT_NE(text.find("safetensors ok"), std::string::npos) << text;
}

TEST_F(TrainerTest, CorruptOrMismatchedCheckpointsAreClearErrors) {
  std::string garbage = (dir_ / "garbage.ckpt").string();
  WriteFileAtomically(garbage, "not a checkpoint at all");
  try {
    RunTest(Config("x"), garbage);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is corrupt or not a checkpoint"), std::string::npos) << e.what();
  }
  nlohmann::json config = Config("m");
  config["trainer"]["max_epochs"] = 1;
  RunTrain(config);
  nlohmann::json wider = Config("m");
  wider["model"]["hidden"] = {16};
  try {
    RunTest(wider, (dir_ / "m" / "checkpoints" / "last.ckpt").string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has shape [32, 64], the model's is [16, 64]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shoal::train
