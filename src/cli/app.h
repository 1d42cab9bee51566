// The `shoal` command line: subcommand registration and the exit-status contract.
//   0  success (and --help)
//   1  the operation failed: one line "shoal: error: ..." on stderr
//   2  usage error (unknown command, bad flag, missing argument): message and hint on stderr
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace shoal::cli {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

/// Runs the shoal command line on argv and returns the process exit status. Never throws.
int Run(int argc, char** argv);

// One registration function per group of subcommands; each adds its subcommands to `app` with
// a callback that does the work and may throw shoal::Error.
void AddVersionCommand(CLI::App& app);
void AddParquetCommands(CLI::App& app);
void AddTableCommands(CLI::App& app);
void AddIngestCommands(CLI::App& app);
void AddDataCommands(CLI::App& app);
void AddLaunchCommands(CLI::App& app);
void AddTrackCommands(CLI::App& app);

/// Thrown by a command whose outcome is an exit status of its own (`shoal launch`); Run()
/// returns it without a message.
struct ExitStatus {
  int status;
};

/// The `shoal-torch` helper beside this executable (the commands that need LibTorch), or empty
/// when it was not built.
std::string TorchHelperPath();
/// Runs the helper with `args` and returns its standard output, trimmed. Throws shoal::Error
/// when it cannot run or fails.
std::string RunTorchHelper(const std::vector<std::string>& args);

}  // namespace shoal::cli
