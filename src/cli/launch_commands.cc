// `shoal launch`: runs the processes of a distributed job (dist/launcher.h).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/app.h"
#include "dist/launcher.h"
#include "util/error.h"

namespace shoal::cli {

void AddLaunchCommands(CLI::App& app) {
  struct Args {
    int np = 1;
    std::string hosts, hostfile, rsh = "ssh";
    int max_restarts = 0;
    double start_timeout = 300;
    int master_port = 0;
    std::vector<std::string> command;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("launch", "Run a command as the N processes of a distributed job, each output line prefixed with [rank]");
  cmd->add_option("--np,-n", a->np, "Number of processes (ranks); written -np N")->required()->check(CLI::Range(1, 65536));
  cmd->add_option("-H,--hosts", a->hosts, "Hosts and their slots: host1:2,host2:2 (default: every rank on this machine)");
  cmd->add_option("--hostfile", a->hostfile, "A file of hosts, one a line: 'host', 'host:N' or 'host slots=N'")
      ->excludes("--hosts");
  cmd->add_option("--max-restarts", a->max_restarts, "After a failure, relaunch the whole job up to K times; the job "
                                                     "resumes from its last checkpoint (shoal train does)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--start-timeout", a->start_timeout, "Seconds the workers wait for each other at rendezvous")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--master-port", a->master_port, "The rendezvous port on rank 0's host (default: a free one)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--rsh", a->rsh, "The remote shell for hosts other than this one, run as RSH HOST COMMAND");
  cmd->add_option("command", a->command, "The command each rank runs, after --")->required();
  cmd->footer(
      "Each rank gets SHOAL_RANK, SHOAL_WORLD_SIZE, SHOAL_LOCAL_RANK, SHOAL_LOCAL_WORLD_SIZE,\n"
      "SHOAL_MASTER_ADDR, SHOAL_MASTER_PORT, SHOAL_START_TIMEOUT and SHOAL_RESTART_COUNT.\n"
      "When a rank exits non-zero or dies, the others get SIGTERM, then SIGKILL 5 s later, and\n"
      "launch exits 1 naming the rank (after the restarts, if any).\n"
      "Example: shoal launch -np 2 -- shoal train --config examples/fashion_mnist.yaml");
  cmd->callback([a] {
    dist::LaunchOptions o;
    o.np = a->np;
    if (!a->hosts.empty()) o.hosts = dist::ParseHostList(a->hosts);
    if (!a->hostfile.empty()) o.hosts = dist::ReadHostfile(a->hostfile);
    o.max_restarts = a->max_restarts;
    o.start_timeout_s = a->start_timeout;
    o.master_port = a->master_port;
    o.rsh = a->rsh;
    o.command = a->command;
    std::cout.flush();
    int status = dist::Launch(o);
    if (status != 0) throw ExitStatus(status);
  });
}

}  // namespace shoal::cli
