// Runs the built `shoal` binary as a user would and checks the exit-status contract.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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
  EXPECT_NE(r.out.find("libtorch 1."), std::string::npos) << r.out;
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

}  // namespace
