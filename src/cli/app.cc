#include "cli/app.h"

#include <CLI/CLI.hpp>

#include <exception>
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
