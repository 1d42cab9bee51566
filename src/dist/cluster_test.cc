#include "dist/cluster.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "util/error.h"

namespace shoal::dist {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// No resource config on this machine's default path is assumed: tests point it elsewhere.
const std::string kNoConfig = "/nonexistent/resourceconfig.json";

TEST(ClusterEnvTest, NothingSetIsOneProcess) {
  ClusterEnv c = DetectClusterEnv(Env({{"SHOAL_SM_RESOURCECONFIG", kNoConfig}}));
  EXPECT_EQ(c.source, "single");
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.world_size, 1);
  EXPECT_FALSE(c.distributed());
}

TEST(ClusterEnvTest, ShoalLauncherComesFirst) {
  ClusterEnv c = DetectClusterEnv(Env({{"SHOAL_RANK", "1"}, {"SHOAL_WORLD_SIZE", "2"}, {"SHOAL_LOCAL_RANK", "1"},
                                       {"SHOAL_LOCAL_WORLD_SIZE", "2"}, {"SHOAL_MASTER_ADDR", "10.0.0.1"},
                                       {"SHOAL_MASTER_PORT", "4000"}, {"SHOAL_RESTART_COUNT", "1"},
                                       {"SHOAL_START_TIMEOUT", "7.5"},
                                       // A torchrun and a Slurm environment around it lose.
                                       {"RANK", "5"}, {"WORLD_SIZE", "8"}, {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}));
  EXPECT_EQ(c.source, "shoal");
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.master_addr, "10.0.0.1");
  EXPECT_EQ(c.master_port, 4000);
  EXPECT_EQ(c.restart_count, 1);
  EXPECT_DOUBLE_EQ(c.start_timeout_s, 7.5);
}

TEST(ClusterEnvTest, TorchrunBeforeOpenMpiAndSlurm) {
  ClusterEnv c = DetectClusterEnv(Env({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                                       {"MASTER_ADDR", "node1"}, {"MASTER_PORT", "29400"},
                                       {"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  EXPECT_EQ(c.source, "torchrun");
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.local_world_size, 2);
  EXPECT_EQ(c.master_addr, "node1");
  EXPECT_EQ(c.master_port, 29400);
}

TEST(ClusterEnvTest, OpenMpiBeforeSlurm) {
  ClusterEnv c = DetectClusterEnv(Env({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                       {"MASTER_ADDR", "head"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}));
  EXPECT_EQ(c.source, "openmpi");
  EXPECT_EQ(c.rank, 2);
  EXPECT_EQ(c.world_size, 4);
  EXPECT_EQ(c.local_world_size, 2);
  EXPECT_EQ(c.master_addr, "head");
}

TEST(ClusterEnvTest, SlurmTakesTheFirstHostOfTheNodeList) {
  ClusterEnv c = DetectClusterEnv(Env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                                       {"SLURM_NTASKS_PER_NODE", "2(x4)"}, {"SLURM_NODELIST", "gpu[07-09,12],cpu1"},
                                       {"SHOAL_SM_RESOURCECONFIG", kNoConfig}}));
  EXPECT_EQ(c.source, "slurm");
  EXPECT_EQ(c.rank, 5);
  EXPECT_EQ(c.world_size, 8);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.local_world_size, 2);
  EXPECT_EQ(c.master_addr, "gpu07");
  EXPECT_EQ(FirstSlurmHost("node1,node2"), "node1");
  EXPECT_EQ(FirstSlurmHost("n[3,5]"), "n3");
  EXPECT_EQ(FirstSlurmHost("rack[2-4]-gpu"), "rack2-gpu");
  EXPECT_THROW(FirstSlurmHost("n[3-5"), Error);
}

TEST(ClusterEnvTest, SageMakerResourceConfigSortsHosts) {
  auto path = std::filesystem::temp_directory_path() / ("shoal_rc_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"current_host": "algo-1", "hosts": ["algo-2", "algo-1", "algo-3"]})";
  ClusterEnv c = DetectClusterEnv(Env({{"SHOAL_SM_RESOURCECONFIG", path.string()}}));
  EXPECT_EQ(c.source, "sagemaker");
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.world_size, 3);
  EXPECT_EQ(c.master_addr, "algo-1");
  std::ofstream(path) << "{not json";
  EXPECT_THROW(DetectClusterEnv(Env({{"SHOAL_SM_RESOURCECONFIG", path.string()}})), Error);
  std::filesystem::remove(path);
}

TEST(ClusterEnvTest, SageMakerEnvironmentVariables) {
  ClusterEnv c = DetectClusterEnv(Env({{"SHOAL_SM_RESOURCECONFIG", kNoConfig},
                                       {"SM_HOSTS", R"(["algo-2","algo-1"])"}, {"SM_CURRENT_HOST", "algo-2"}}));
  EXPECT_EQ(c.source, "sagemaker");
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.master_addr, "algo-1");
  EXPECT_THROW(DetectClusterEnv(Env({{"SHOAL_SM_RESOURCECONFIG", kNoConfig}, {"SM_HOSTS", R"(["a"])"},
                                     {"SM_CURRENT_HOST", "b"}})),
               Error);
}

TEST(ClusterEnvTest, MalformedValuesNameTheVariable) {
  auto message = [](std::map<std::string, std::string> vars) {
    try {
      DetectClusterEnv(Env(std::move(vars)));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("outside 0..1"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}}).find("WORLD_SIZE is not set"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}).find("MASTER_PORT"), std::string::npos);
  EXPECT_NE(message({{"SHOAL_START_TIMEOUT", "soon"}}).find("SHOAL_START_TIMEOUT"), std::string::npos);
}

}  // namespace
}  // namespace shoal::dist
