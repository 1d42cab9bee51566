#include "dist/cluster.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace shoal::dist {

namespace {

int ParseInt(const EnvLookup& env, const std::string& name, int min) {
  std::optional<std::string> text = env(name);
  if (!text) throw InvalidError("environment variable " + name + " is not set");
  try {
    size_t used = 0;
    long value = std::stol(*text, &used);
    if (used != text->size() || value < min || value > 1'000'000) throw std::out_of_range("range");
    return static_cast<int>(value);
  } catch (const std::exception&) {
    throw InvalidError("environment variable " + name + "='" + *text + "' is not a whole number >= " + std::to_string(min));
  }
}

int IntOr(const EnvLookup& env, const std::string& name, int fallback, int min) {
  return env(name) ? ParseInt(env, name, min) : fallback;
}

int PortOr(const EnvLookup& env, const std::string& name, int fallback) {
  int port = IntOr(env, name, fallback, 1);
  if (port > 65535) throw InvalidError("environment variable " + name + "=" + std::to_string(port) + " is not a port (1..65535)");
  return port;
}

void Check(const ClusterEnv& c, const std::string& vars) {
  if (c.world_size < 1) throw InvalidError(vars + ": world size " + std::to_string(c.world_size) + " must be positive");
  if (c.rank >= c.world_size) {
    throw InvalidError(vars + ": rank " + std::to_string(c.rank) + " is outside 0.." + std::to_string(c.world_size - 1));
  }
  if (c.local_rank >= c.local_world_size) {
    throw InvalidError(vars + ": local rank " + std::to_string(c.local_rank) + " is outside 0.." +
                       std::to_string(c.local_world_size - 1));
  }
  if (c.master_port < 1 || c.master_port > 65535) {
    throw InvalidError(vars + ": master port " + std::to_string(c.master_port) + " is outside 1..65535");
  }
  if (c.master_addr.empty()) throw InvalidError(vars + ": the master address is empty");
}

// MASTER_ADDR and MASTER_PORT, when set, name the master for launchers that do not.
void MasterOverride(const EnvLookup& env, ClusterEnv& c) {
  if (auto addr = env("MASTER_ADDR")) c.master_addr = *addr;
  c.master_port = PortOr(env, "MASTER_PORT", c.master_port);
}

std::optional<ClusterEnv> FromPrefix(const EnvLookup& env, const std::string& p, const std::string& source) {
  if (!env(p + "RANK") && !env(p + "WORLD_SIZE")) return std::nullopt;
  ClusterEnv c;
  c.source = source;
  c.rank = ParseInt(env, p + "RANK", 0);
  c.world_size = ParseInt(env, p + "WORLD_SIZE", 1);
  c.local_rank = IntOr(env, p + "LOCAL_RANK", c.rank, 0);
  c.local_world_size = IntOr(env, p + "LOCAL_WORLD_SIZE", c.world_size, 1);
  if (auto addr = env(p + "MASTER_ADDR")) c.master_addr = *addr;
  c.master_port = PortOr(env, p + "MASTER_PORT", c.master_port);
  Check(c, p + "RANK/" + p + "WORLD_SIZE");
  return c;
}

std::optional<ClusterEnv> FromOpenMpi(const EnvLookup& env) {
  if (!env("OMPI_COMM_WORLD_RANK")) return std::nullopt;
  ClusterEnv c;
  c.source = "openmpi";
  c.rank = ParseInt(env, "OMPI_COMM_WORLD_RANK", 0);
  c.world_size = ParseInt(env, "OMPI_COMM_WORLD_SIZE", 1);
  c.local_rank = IntOr(env, "OMPI_COMM_WORLD_LOCAL_RANK", c.rank, 0);
  c.local_world_size = IntOr(env, "OMPI_COMM_WORLD_LOCAL_SIZE", c.world_size, 1);
  MasterOverride(env, c);
  Check(c, "OMPI_COMM_WORLD_*");
  return c;
}

std::optional<ClusterEnv> FromSlurm(const EnvLookup& env) {
  if (!env("SLURM_PROCID")) return std::nullopt;
  ClusterEnv c;
  c.source = "slurm";
  c.rank = ParseInt(env, "SLURM_PROCID", 0);
  c.world_size = ParseInt(env, "SLURM_NTASKS", 1);
  c.local_rank = IntOr(env, "SLURM_LOCALID", 0, 0);
  // SLURM_NTASKS_PER_NODE may read "2(x3)"; its leading number is the tasks on this node.
  c.local_world_size = c.world_size;
  if (auto per_node = env("SLURM_NTASKS_PER_NODE")) {
    int n = std::atoi(per_node->c_str());
    if (n > 0) c.local_world_size = n;
  }
  if (auto nodes = env("SLURM_NODELIST"); nodes && !nodes->empty()) {
    c.master_addr = FirstSlurmHost(*nodes);
  } else if (auto job_nodes = env("SLURM_JOB_NODELIST"); job_nodes && !job_nodes->empty()) {
    c.master_addr = FirstSlurmHost(*job_nodes);
  }
  MasterOverride(env, c);
  Check(c, "SLURM_PROCID/SLURM_NTASKS");
  return c;
}

ClusterEnv FromHosts(std::vector<std::string> hosts, const std::string& current, const std::string& where) {
  if (hosts.empty()) throw InvalidError(where + " lists no hosts");
  std::sort(hosts.begin(), hosts.end());
  auto it = std::find(hosts.begin(), hosts.end(), current);
  if (it == hosts.end()) throw InvalidError(where + ": current host '" + current + "' is not among its hosts");
  ClusterEnv c;
  c.source = "sagemaker";
  c.rank = static_cast<int>(it - hosts.begin());
  c.world_size = static_cast<int>(hosts.size());
  c.master_addr = hosts.front();
  return c;
}

std::optional<ClusterEnv> FromSageMaker(const EnvLookup& env) {
  std::string path = env("SHOAL_SM_RESOURCECONFIG").value_or(kSageMakerResourceConfig);
  std::ifstream in(path);
  std::optional<ClusterEnv> found;
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    try {
      nlohmann::json j = nlohmann::json::parse(text.str());
      found = FromHosts(j.at("hosts").get<std::vector<std::string>>(), j.at("current_host").get<std::string>(),
                        "SageMaker resource config '" + path + "'");
    } catch (const nlohmann::json::exception& e) {
      throw InvalidError("SageMaker resource config '" + path + "' is malformed: " + e.what());
    }
  } else if (auto hosts = env("SM_HOSTS")) {
    std::vector<std::string> list;
    try {
      list = nlohmann::json::parse(*hosts).get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception&) {
      throw InvalidError("SM_HOSTS='" + *hosts + "' is not a JSON list of host names");
    }
    std::optional<std::string> current = env("SM_CURRENT_HOST");
    if (!current) throw InvalidError("SM_HOSTS is set but SM_CURRENT_HOST is not");
    found = FromHosts(list, *current, "SM_HOSTS");
  }
  if (found) {
    MasterOverride(env, *found);
    Check(*found, "SageMaker");
  }
  return found;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::string FirstSlurmHost(const std::string& nodelist) {
  // The first entry ends at a comma outside brackets.
  std::string first;
  int depth = 0;
  for (char ch : nodelist) {
    if (ch == '[') ++depth;
    if (ch == ']') --depth;
    if (ch == ',' && depth == 0) break;
    first += ch;
  }
  size_t open = first.find('[');
  if (open == std::string::npos) return first;
  size_t close = first.find(']', open);
  if (close == std::string::npos) throw InvalidError("SLURM_NODELIST='" + nodelist + "' has an unclosed '['");
  std::string range = first.substr(open + 1, close - open - 1);
  std::string head = range.substr(0, range.find_first_of(",-"));
  return first.substr(0, open) + head + first.substr(close + 1);
}

ClusterEnv DetectClusterEnv(const EnvLookup& env) {
  std::optional<ClusterEnv> c = FromPrefix(env, "SHOAL_", "shoal");
  if (!c) c = FromPrefix(env, "", "torchrun");
  if (!c) c = FromOpenMpi(env);
  if (!c) c = FromSlurm(env);
  if (!c) c = FromSageMaker(env);
  if (!c) c = ClusterEnv{};
  if (auto timeout = env("SHOAL_START_TIMEOUT")) {
    char* end = nullptr;
    double s = std::strtod(timeout->c_str(), &end);
    if (end == timeout->c_str() || *end != '\0' || !(s > 0)) {
      throw InvalidError("SHOAL_START_TIMEOUT='" + *timeout + "' is not a positive number of seconds");
    }
    c->start_timeout_s = s;
  }
  c->restart_count = IntOr(env, "SHOAL_RESTART_COUNT", 0, 0);
  return *c;
}

}  // namespace shoal::dist
