// Where this process sits in a distributed job: its rank, the world size, and where to meet the
// others. Read from the environment that launched it, in a documented order of precedence. No
// torch here: the launcher (`shoal launch`) and the process group both use it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shoal::dist {

struct ClusterEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  /// Which environment it came from: "shoal", "torchrun", "openmpi", "slurm", "sagemaker", or
  /// "single" (none found: one process).
  std::string source = "single";
  /// Seconds the workers wait for each other at rendezvous (SHOAL_START_TIMEOUT).
  double start_timeout_s = 300;
  /// Which attempt of a job the launcher is running (0: the first; SHOAL_RESTART_COUNT).
  int restart_count = 0;

  bool distributed() const { return world_size > 1; }
};

/// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

/// The default path of SageMaker's resource config, overridden by SHOAL_SM_RESOURCECONFIG.
inline constexpr const char* kSageMakerResourceConfig = "/opt/ml/input/config/resourceconfig.json";

/// Detects the cluster environment. Precedence, first match wins:
///   1. shoal's launcher: SHOAL_RANK, SHOAL_WORLD_SIZE, SHOAL_LOCAL_RANK, SHOAL_LOCAL_WORLD_SIZE,
///      SHOAL_MASTER_ADDR, SHOAL_MASTER_PORT;
///   2. torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
///   3. OpenMPI's mpirun: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE;
///   4. Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the first host of SLURM_NODELIST;
///   5. SageMaker: the resource config's sorted "hosts" and "current_host", else SM_HOSTS and
///      SM_CURRENT_HOST.
/// For 3-5, MASTER_ADDR and MASTER_PORT override the master when set. Throws InvalidError for
/// values that are malformed or do not fit together, naming the variable.
ClusterEnv DetectClusterEnv(const EnvLookup& env = ProcessEnv());

/// The first host of a Slurm node list: "node[07-09,12],gpu1" -> "node07".
std::string FirstSlurmHost(const std::string& nodelist);

}  // namespace shoal::dist
