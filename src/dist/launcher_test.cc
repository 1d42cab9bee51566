#include "dist/launcher.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace shoal::dist {
namespace {

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shoal_launch_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  struct Outcome {
    int status;
    std::string out, err;
    double seconds;
  };

  // Runs `script` under sh on every rank.
  Outcome Run(int np, const std::string& script, int max_restarts = 0) {
    LaunchOptions o;
    o.np = np;
    o.max_restarts = max_restarts;
    o.grace_s = 2;
    o.command = {"/bin/sh", "-c", script};
    std::string out_path = (dir_ / "out").string(), err_path = (dir_ / "err").string();
    o.out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    o.err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    auto start = std::chrono::steady_clock::now();
    int status = Launch(o);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ::close(o.out_fd);
    ::close(o.err_fd);
    return {status, Slurp(out_path), Slurp(err_path), seconds};
  }

  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
};

TEST_F(LauncherTest, EveryRankGetsItsEnvironmentAndPrefixedLines) {
  Outcome r = Run(3, "echo \"rank $SHOAL_RANK of $SHOAL_WORLD_SIZE local $SHOAL_LOCAL_RANK/$SHOAL_LOCAL_WORLD_SIZE "
                     "at $SHOAL_MASTER_ADDR\"; printf 'no newline'; echo warn >&2");
  EXPECT_EQ(r.status, 0) << r.err;
  for (int k = 0; k < 3; ++k) {
    std::string rank = std::to_string(k);
    EXPECT_NE(r.out.find("[" + rank + "] rank " + rank + " of 3 local " + rank + "/3 at 127.0.0.1\n"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("[" + rank + "] no newline\n"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("[" + rank + "] warn\n"), std::string::npos) << r.err;
  }
}

TEST_F(LauncherTest, AFailingRankStopsTheOthersAndIsNamed) {
  Outcome r = Run(3, "if [ $SHOAL_RANK = 1 ]; then sleep 0.3; exit 3; fi; exec sleep 60");
  EXPECT_EQ(r.status, 1);
  EXPECT_LT(r.seconds, 20);
  EXPECT_NE(r.err.find("rank 1 exited with status 3"), std::string::npos) << r.err;
}

TEST_F(LauncherTest, AKilledRankIsNamedWithItsSignal) {
  Outcome r = Run(2, "if [ $SHOAL_RANK = 0 ]; then sleep 0.3; kill -9 $$; fi; exec sleep 60");
  EXPECT_EQ(r.status, 1);
  EXPECT_LT(r.seconds, 20);
  EXPECT_NE(r.err.find("rank 0 was killed by signal 9 (SIGKILL)"), std::string::npos) << r.err;
}

TEST_F(LauncherTest, ARankThatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  Outcome r = Run(2, "if [ $SHOAL_RANK = 1 ]; then sleep 0.3; exit 1; fi; trap '' TERM; while true; do sleep 0.1; done");
  EXPECT_EQ(r.status, 1);
  EXPECT_LT(r.seconds, 20);
}

TEST_F(LauncherTest, RestartsRelaunchTheWholeJob) {
  std::string marker = (dir_ / "attempts").string();
  Outcome r = Run(2, "echo $SHOAL_RESTART_COUNT >> " + marker +
                         "; if [ $SHOAL_RESTART_COUNT = 0 ] && [ $SHOAL_RANK = 1 ]; then sleep 0.3; exit 4; fi; "
                         "if [ $SHOAL_RESTART_COUNT = 0 ]; then exec sleep 60; fi; echo finished",
                  1);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("restarting the job (restart 1 of 1)"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("[0] finished"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] finished"), std::string::npos) << r.out;
  std::string attempts = Slurp(marker);
  // Rank 0 of the first attempt may be stopped before it writes; the second attempt runs both.
  EXPECT_GE(std::count(attempts.begin(), attempts.end(), '0'), 1) << attempts;
  EXPECT_EQ(std::count(attempts.begin(), attempts.end(), '1'), 2) << attempts;
}

TEST_F(LauncherTest, RestartsRunOut) {
  Outcome r = Run(2, "exit 5", 2);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("job failed: rank"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("after 2 restarts"), std::string::npos) << r.err;
}

TEST_F(LauncherTest, AMissingProgramFails) {
  LaunchOptions o;
  o.np = 2;
  o.command = {"/nonexistent/program"};
  o.out_fd = o.err_fd = ::open("/dev/null", O_WRONLY);
  EXPECT_EQ(Launch(o), 1);
  ::close(o.out_fd);
}

TEST_F(LauncherTest, HostListsAndHostfiles) {
  std::vector<HostSlots> h = ParseHostList("a:2,b,c:4");
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].host, "a");
  EXPECT_EQ(h[0].slots, 2);
  EXPECT_EQ(h[1].slots, 1);
  EXPECT_THROW(ParseHostList("a:0"), Error);
  EXPECT_THROW(ParseHostList("a,,b"), Error);
  EXPECT_THROW(ParseHostList(":3"), Error);
  std::string path = (dir_ / "hosts").string();
  std::ofstream(path) << "# cluster\nnode1 slots=2\nnode2:3  # comment\n\nnode3\n";
  h = ReadHostfile(path);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].slots, 2);
  EXPECT_EQ(h[1].host, "node2");
  EXPECT_EQ(h[1].slots, 3);
  std::ofstream(path) << "node1 cpus=2\n";
  EXPECT_THROW(ReadHostfile(path), Error);
  EXPECT_THROW(ReadHostfile((dir_ / "missing").string()), Error);
}

TEST_F(LauncherTest, TooFewSlotsIsAnError) {
  LaunchOptions o;
  o.np = 4;
  o.hosts = ParseHostList("localhost:2");
  o.command = {"true"};
  EXPECT_THROW(Launch(o), Error);
}

TEST_F(LauncherTest, RemoteHostsRunThroughTheRemoteShell) {
  // A stand-in remote shell that runs the command here, as ssh would on the host.
  std::string rsh = (dir_ / "rsh").string();
  std::ofstream(rsh) << "#!/bin/sh\nhost=$1; shift\necho \"via $host\" >&2\nexec /bin/sh -c \"$1\"\n";
  std::filesystem::permissions(rsh, std::filesystem::perms::owner_all);
  LaunchOptions o;
  o.np = 3;
  o.hosts = ParseHostList("hostA:2,hostB:2");
  o.rsh = rsh;
  o.command = {"/bin/sh", "-c", "echo \"$SHOAL_RANK $SHOAL_LOCAL_RANK/$SHOAL_LOCAL_WORLD_SIZE $SHOAL_MASTER_ADDR 'quoted arg'\""};
  std::string out_path = (dir_ / "out").string(), err_path = (dir_ / "err").string();
  o.out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  o.err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_EQ(Launch(o), 0);
  ::close(o.out_fd);
  ::close(o.err_fd);
  std::string out = Slurp(out_path), err = Slurp(err_path);
  EXPECT_NE(out.find("[0] 0 0/2 hostA 'quoted arg'"), std::string::npos) << out << err;
  EXPECT_NE(out.find("[1] 1 1/2 hostA"), std::string::npos) << out;
  EXPECT_NE(out.find("[2] 2 0/1 hostA"), std::string::npos) << out;
  EXPECT_NE(err.find("[2] via hostB"), std::string::npos) << err;
}

}  // namespace
}  // namespace shoal::dist
