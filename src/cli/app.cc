#include "cli/app.h"

#include <CLI/CLI.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "util/error.h"

namespace shoal::cli {

namespace {

constexpr const char* kDescription =
    "shoal: train deep-learning models on lakehouse (Delta Lake / Parquet) data.";

// CLI11 reports an unknown first word as "a subcommand is required"; name the word instead.
void PrintUsageError(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::string message = e.what();
  if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
    message = std::string("unknown command '") + argv[1] + "'";
  }
  std::cerr << "shoal: usage error: " << message << "\n"
            << "Run 'shoal --help' for the list of commands, or 'shoal COMMAND --help'.\n";
}

}  // namespace

std::string TorchHelperPath() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  std::filesystem::path helper = self.parent_path() / "shoal-torch";
  return std::filesystem::exists(helper, ec) ? helper.string() : "";
}

std::string RunTorchHelper(const std::vector<std::string>& args) {
  std::string helper = TorchHelperPath();
  if (helper.empty()) throw NotFoundError("shoal-torch, the helper for LibTorch commands, is not beside shoal");
  int out[2];
  if (::pipe(out) != 0) throw SystemError("cannot create a pipe for", helper, errno);
  pid_t pid = ::fork();
  if (pid < 0) throw SystemError("cannot start", helper, errno);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    std::vector<char*> argv{const_cast<char*>(helper.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(helper.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  std::array<char, 4096> buffer;
  ssize_t n;
  while ((n = ::read(out[0], buffer.data(), buffer.size())) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buffer.data(), static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw IOError("'" + helper + "' failed (status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

namespace {

// `shoal train|test|predict` run in the helper, with their arguments as given.
void AddTorchCommands(CLI::App& app) {
  const std::pair<const char*, const char*> commands[] = {
      {"train", "Train a model from a YAML config (--config FILE [--section.key=value ...]); see 'shoal train --help'"},
      {"test", "Test a checkpoint on a test table (--ckpt C [--config FILE])"},
      {"predict", "Predict a table's classes into a new Delta table (--ckpt C --table T --out TABLE)"},
      {"export", "Export a checkpoint's weights as safetensors (--ckpt C --out FILE.safetensors)"},
  };
  for (const auto& [name, description] : commands) {
    CLI::App* sub = app.add_subcommand(name, description);
    sub->prefix_command();
    sub->set_help_flag();
    sub->callback([sub, command = std::string(name)] {
      std::string helper = TorchHelperPath();
      if (helper.empty()) throw NotFoundError("'shoal " + command + "' needs shoal-torch, which this build lacks (built without LibTorch)");
      std::vector<std::string> args = {helper, command};
      for (const std::string& a : sub->remaining()) args.push_back(a);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      std::cout.flush();
      ::execv(helper.c_str(), argv.data());
      throw SystemError("cannot run", helper, errno);
    });
  }
}

}  // namespace

int Run(int argc, char** argv) {
  CLI::App app(kDescription, "shoal");
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_help_all_flag("--help-all", "Print help for every command");
  app.footer(
      "Exit status: 0 on success, 1 when the operation fails, 2 on a usage error.\n"
      "Documentation: README.md and docs/ in the shoal source tree.");
  AddVersionCommand(app);
  AddParquetCommands(app);
  AddTableCommands(app);
  AddIngestCommands(app);
  AddDataCommands(app);
  AddTorchCommands(app);
  AddLaunchCommands(app);
  AddTrackCommands(app);

  // `shoal launch -np N` (mpirun's spelling): CLI11 takes one-letter short options only.
  std::vector<std::string> words(argv, argv + argc);
  if (argc > 1 && words[1] == "launch") {
    for (size_t i = 2; i < words.size() && words[i] != "--"; ++i) {
      if (words[i] == "-np") words[i] = "--np";
    }
  }
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(w.data());
  argc = static_cast<int>(args.size());
  argv = args.data();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    PrintUsageError(app, e, argc, argv);
    return kExitUsage;
  } catch (const ExitStatus& e) {
    return e.status;
  } catch (const shoal::Error& e) {
    std::cerr << "shoal: error: " << e.what() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    // Not a shoal::Error: a failure from a library underneath, reported the same way.
    std::cerr << "shoal: error: " << e.what() << "\n";
    return kExitFailure;
  }
  return 0;
}

}  // namespace shoal::cli
