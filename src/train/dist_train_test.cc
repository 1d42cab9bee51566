// `shoal launch -np 2 -- shoal train ...` end to end: ranks in sync, restarts resume.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "data/testing.h"
#include "util/process_testing.h"

namespace shoal::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Slurp(const fs::path& path) { return shoal::testing::SlurpFile(path.string()); }

class DistTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal_dist_train_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    data::testing::MakeImageTable(dir_, "t", 2400, 400);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> Command(int np, const std::vector<std::string>& launch_flags, const std::string& run,
                                   const std::vector<std::string>& overrides) {
    std::vector<std::string> argv = {SHOAL_BINARY, "launch", "-np", std::to_string(np)};
    argv.insert(argv.end(), launch_flags.begin(), launch_flags.end());
    for (std::string a : std::vector<std::string>{"--", SHOAL_BINARY, "train", "--data.root=" + dir_.string(), "--data.dataset=",
                          "--data.train_table=t", "--data.test_table=t", "--data.train_where=id < 2000",
                          "--data.val_where=id >= 2000", "--data.batch_size=8", "--data.threads=1",
                          "--model.name=mlp", "--model.hidden=[32]", "--model.dropout=0.1", "--optimizer.lr=0.01",
                          "--trainer.seed=3", "--trainer.num_sanity_val_steps=0",
                          "--trainer.default_root_dir=" + (dir_ / run).string(), "--callbacks.early_stopping.enabled=false",
                          "--callbacks.model_checkpoint.monitor=val_loss"}) {
      argv.push_back(a);
    }
    argv.insert(argv.end(), overrides.begin(), overrides.end());
    return argv;
  }

  pid_t Start(const std::vector<std::string>& argv) {
    return shoal::testing::StartProcess(argv, (dir_ / "out").string(), (dir_ / "err").string());
  }
  int Wait(pid_t pid, double limit_s) { return shoal::testing::WaitProcess(pid, limit_s); }

  // The JSON line rank 0 printed last.
  nlohmann::json Result() {
    std::string out = Slurp(dir_ / "out");
    size_t at = out.rfind("[0] {");
    if (at == std::string::npos) return nullptr;
    return nlohmann::json::parse(out.substr(at + 4, out.find('\n', at) - at - 4));
  }

  fs::path dir_;
};

TEST_F(DistTrainTest, TwoRanksTrainInStepAndRankZeroReports) {
  int status = Wait(Start(Command(2, {}, "two", {"--trainer.max_epochs=2"})), 300);
  ASSERT_EQ(status, 0) << Slurp(dir_ / "err");
  nlohmann::json r = Result();
  ASSERT_FALSE(r.is_null()) << Slurp(dir_ / "out");
  EXPECT_EQ(r["world_size"], 2);
  EXPECT_EQ(r["epochs"], 2);
  EXPECT_EQ(r["global_step"], 250);  // 2000 rows / 2 ranks / 8 = 125 steps an epoch
  EXPECT_GT(r["test_acc"].get<double>(), 0.5);
  EXPECT_EQ(r["weights_crc32"].get<std::string>().size(), 8u);  // checked equal on both ranks
  std::string out = Slurp(dir_ / "out"), err = Slurp(dir_ / "err");
  EXPECT_EQ(out.find("[1] {"), std::string::npos) << "rank 1 printed a result";
  EXPECT_EQ(err.find("[1] shoal train: epoch"), std::string::npos) << "rank 1 logged progress";
  EXPECT_NE(err.find("[0] shoal train: epoch 1 done"), std::string::npos) << err;
}

TEST_F(DistTrainTest, ARestartedJobResumesFromItsLastCheckpoint) {
  fs::path last = dir_ / "restart" / "checkpoints" / "last.ckpt";
  pid_t launcher = Start(Command(2, {"--max-restarts", "1"}, "restart",
                                 {"--trainer.max_epochs=12", "--callbacks.model_checkpoint.every_n_train_steps=20",
                                  "--callbacks.model_checkpoint.monitor=", "--callbacks.model_checkpoint.save_top_k=-1",
                                  "--callbacks.model_checkpoint.filename={step}"}));
  auto start = Clock::now();
  while (!fs::exists(last) && Clock::now() - start < std::chrono::seconds(120) && ::kill(launcher, 0) == 0 &&
         ::waitpid(launcher, nullptr, WNOHANG) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(fs::exists(last)) << Slurp(dir_ / "err");
  // Kill rank 1 (the second shoal-torch of the job) with SIGKILL.
  std::string pids = Slurp(fs::path("/proc") / std::to_string(launcher) / "task" / std::to_string(launcher) / "children");
  std::istringstream in(pids);
  std::vector<pid_t> children;
  for (pid_t p; in >> p;) children.push_back(p);
  ASSERT_EQ(children.size(), 2u) << pids;
  ASSERT_EQ(::kill(children[1], SIGKILL), 0);
  int status = Wait(launcher, 300);
  std::string err = Slurp(dir_ / "err");
  ASSERT_EQ(status, 0) << err;
  EXPECT_NE(err.find("rank 1 was killed by signal 9"), std::string::npos) << err;
  EXPECT_NE(err.find("restarting the job (restart 1 of 1)"), std::string::npos) << err;
  EXPECT_NE(err.find("resuming from " + last.string()), std::string::npos) << err;
  EXPECT_NE(err.find("[0] shoal train: resumed from"), std::string::npos) << err;
  nlohmann::json r = Result();
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r["epochs"], 12);
  EXPECT_EQ(r["global_step"], 1500);
}

}  // namespace
}  // namespace shoal::train
