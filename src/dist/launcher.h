// `shoal launch`: starts the processes of a distributed job, local ones directly and remote ones
// through a remote shell (ssh), gives each its rank in the environment (SHOAL_RANK and friends,
// read back by DetectClusterEnv), prefixes their output lines with "[rank] ", stops every
// process when one fails, and can relaunch the whole job a number of times. No torch here.
#pragma once

#include <string>
#include <vector>

namespace shoal::dist {

struct HostSlots {
  std::string host;
  int slots = 1;
};

/// "host1:2,host2:4" (a host without ":N" has one slot).
std::vector<HostSlots> ParseHostList(const std::string& text);
/// A hostfile: one host a line, as "host", "host:N" or "host slots=N"; '#' starts a comment.
std::vector<HostSlots> ReadHostfile(const std::string& path);

struct LaunchOptions {
  int np = 1;
  std::vector<HostSlots> hosts;  ///< empty: every rank on this machine
  int max_restarts = 0;          ///< relaunch the whole job up to this many times after a failure
  double start_timeout_s = 300;  ///< how long workers wait for each other at rendezvous
  int master_port = 0;           ///< 0: a free port on this machine (29500 when the master is remote)
  std::string rsh = "ssh";       ///< the remote shell, split on spaces; run as RSH HOST COMMAND
  double grace_s = 5;            ///< after SIGTERM, how long the others get before SIGKILL
  std::vector<std::string> command;
  int out_fd = 1;                ///< where workers' prefixed stdout lines go
  int err_fd = 2;                ///< where their stderr lines and the launcher's messages go
};

/// Whether `host` names this machine (localhost, 127.0.0.1, ::1 or its host name).
bool IsLocalHost(const std::string& host);

/// Runs the job and returns the launcher's exit status: 0 when every rank exited 0; 1 after a
/// failure that used up the restarts (the message names the rank); 128+signal when the launcher
/// itself was interrupted. Throws InvalidError for options that do not fit (too few slots).
int Launch(const LaunchOptions& options);

}  // namespace shoal::dist
