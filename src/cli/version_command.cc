// `shoal version`: the versions shoal was built with, and what hardware LibTorch sees. The
// `shoal` binary does not load LibTorch (it would cost every command ~120 MB of memory and a
// slower start); the device count comes from the `shoal-torch` helper beside it.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/app.h"
#include "cli/version.h"

namespace shoal::cli {

void AddVersionCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("version", "Print the shoal and LibTorch versions, and the CUDA devices LibTorch sees");
  cmd->callback([] {
    std::cout << "shoal " << SHOAL_VERSION << "\n"
              << "libtorch " << SHOAL_LIBTORCH_VERSION << "\n";
    std::string helper = TorchHelperPath();
    if (helper.empty()) {
      std::cout << "cuda devices unknown (shoal-torch is not built)\n";
    } else {
      std::cout << "cuda devices " << RunTorchHelper({"devices"}) << "\n";
    }
  });
}

}  // namespace shoal::cli
