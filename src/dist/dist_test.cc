// Distributed training through `shoal launch`: 2 and 4 processes against 1, faults, timeouts.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "util/process_testing.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Slurp(const fs::path& path) { return shoal::testing::SlurpFile(path.string()); }

std::vector<float> Params(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v;
  float x;
  while (in.read(reinterpret_cast<char*>(&x), sizeof x)) v.push_back(x);
  return v;
}

double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::fabs(a[i] - b[i])));
  return d;
}

class DistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("shoal_dist_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  pid_t Start(const std::vector<std::string>& argv) {
    return shoal::testing::StartProcess(argv, (dir_ / "out").string(), (dir_ / "err").string());
  }
  int Wait(pid_t pid, double limit_s, double* seconds = nullptr) { return shoal::testing::WaitProcess(pid, limit_s, seconds); }

  int Launch(int np, std::vector<std::string> worker_args, double limit_s = 120, double* seconds = nullptr) {
    std::vector<std::string> argv = {SHOAL_BINARY, "launch", "-np", std::to_string(np), "--", DIST_WORKER};
    argv.insert(argv.end(), worker_args.begin(), worker_args.end());
    return Wait(Start(argv), limit_s, seconds);
  }

  // The parameters one process reaches on the whole global batch.
  std::vector<float> Single(std::vector<std::string> extra = {}) {
    fs::path d = dir_ / "single";
    fs::create_directories(d);
    std::vector<std::string> argv = {DIST_WORKER, "equal", d.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    EXPECT_EQ(Wait(Start(argv), 60), 0) << Slurp(dir_ / "err");
    return Params(d / "params-0.bin");
  }

  // Runs `np` ranks and checks they end identical; returns rank 0's parameters.
  std::vector<float> Ranks(int np, std::vector<std::string> extra = {}) {
    fs::path d = dir_ / ("np" + std::to_string(np));
    fs::create_directories(d);
    std::vector<std::string> args = {"equal", d.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(Launch(np, args), 0) << Slurp(dir_ / "err");
    std::vector<float> first = Params(d / "params-0.bin");
    EXPECT_FALSE(first.empty());
    for (int r = 1; r < np; ++r) {
      EXPECT_EQ(Params(d / ("params-" + std::to_string(r) + ".bin")), first) << "rank " << r << " differs from rank 0";
    }
    return first;
  }

  fs::path dir_;
};

// Tolerance: float32 sums in a different order, over 20 SGD steps.
constexpr double kTolerance = 1e-5;

TEST_F(DistTest, TwoAndFourProcessesEqualOneOnTheSameGlobalBatch) {
  std::vector<float> one = Single();
  EXPECT_LT(MaxDiff(Ranks(2), one), kTolerance);
  EXPECT_LT(MaxDiff(Ranks(4), one), kTolerance);
}

TEST_F(DistTest, ManySmallBucketsGiveTheSameResult) {
  std::vector<float> one = Single();
  std::string out = Slurp(dir_ / "out");
  EXPECT_LT(MaxDiff(Ranks(2, {"--bucket-bytes", "512"}), one), kTolerance);
  std::string launched = Slurp(dir_ / "out");
  EXPECT_NE(launched.find("[0] buckets 4 "), std::string::npos) << launched;  // 2 weights, 2 biases
}

TEST_F(DistTest, GradientAccumulationSyncsOnlyTheLastMicroStep) {
  std::vector<float> one = Single();
  EXPECT_LT(MaxDiff(Ranks(2, {"--accumulate", "2"}), one), kTolerance);
  std::string launched = Slurp(dir_ / "out");
  EXPECT_NE(launched.find("steps 20\n"), std::string::npos) << launched;  // 20 syncs for 40 backward passes
}

TEST_F(DistTest, LossesScaledForTheAverageGiveTheSameResult) {
  std::vector<float> one = Single();
  std::vector<float> two = Ranks(2, {"--scale-loss", "all", "--accumulate", "2"});
  EXPECT_LT(MaxDiff(two, one), kTolerance);
  EXPECT_LT(MaxDiff(Ranks(4, {"--scale-loss", "all"}), one), kTolerance);
  // With 2 ranks, dividing the loss by 2 is exact: the same bits as dividing the gradients.
  EXPECT_EQ(two, Ranks(2, {"--accumulate", "2"}));
}

TEST_F(DistTest, ScalingSomeLossesButNotOthersIsAnError) {
  fs::path d = dir_ / "mixed";
  fs::create_directories(d);
  EXPECT_NE(Launch(2, {"equal", d.string(), "--scale-loss", "last", "--accumulate", "2"}), 0);
  std::string err = Slurp(dir_ / "err");
  EXPECT_NE(err.find("1 of the 2 backward passes"), std::string::npos) << err;
}

TEST_F(DistTest, Fp16CompressionStaysClose) {
  std::vector<float> one = Single();
  double diff = MaxDiff(Ranks(2, {"--compression", "fp16"}), one);
  EXPECT_LT(diff, 1e-2);
}

TEST_F(DistTest, KillNineOfOneWorkerStopsTheJob) {
  pid_t launcher = Start({SHOAL_BINARY, "launch", "-np", "2", "--", DIST_WORKER, "spin", dir_.string()});
  auto start = Clock::now();
  while (!(fs::exists(dir_ / "pid-0") && fs::exists(dir_ / "pid-1")) && Clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(dir_ / "pid-1")) << Slurp(dir_ / "err");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // mid-training
  pid_t rank0 = std::stoi(Slurp(dir_ / "pid-0")), rank1 = std::stoi(Slurp(dir_ / "pid-1"));
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  double seconds = 0;
  int status = Wait(launcher, 60, &seconds);
  EXPECT_NE(status, 0);
  EXPECT_NE(status, -1) << "the launcher did not exit within 60 s";
  EXPECT_LT(seconds, 60);
  EXPECT_NE(::kill(rank0, 0), 0) << "rank 0 outlived the job";
  std::string err = Slurp(dir_ / "err");
  EXPECT_NE(err.find("rank 1 was killed by signal 9"), std::string::npos) << err;
}

TEST_F(DistTest, AWorkerWithADifferentModelIsAClearError) {
  double seconds = 0;
  int status = Launch(2, {"mismatch"}, 60, &seconds);
  EXPECT_EQ(status, 1);
  std::string err = Slurp(dir_ / "err");
  EXPECT_NE(err.find("rank 1's model differs from rank 0's"), std::string::npos) << err;
  EXPECT_NE(err.find("fc1.weight"), std::string::npos) << err;
}

TEST_F(DistTest, ACollectiveTimeoutNamesTheMissingRank) {
  double seconds = 0;
  int status = Launch(2, {"stall", dir_.string(), "--timeout", "2"}, 60, &seconds);
  EXPECT_EQ(status, 1);
  EXPECT_LT(seconds, 25);
  std::string err = Slurp(dir_ / "err");
  EXPECT_NE(err.find("[0] dist_worker: error: comparing the ranks' models"), std::string::npos) << err;
  EXPECT_NE(err.find("waiting for rank(s) 1, which never reached it"), std::string::npos) << err;
}

}  // namespace
