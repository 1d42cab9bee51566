// `shoal version`: the versions shoal was built with, and what hardware LibTorch sees.
#include <CLI/CLI.hpp>
#include <torch/cuda.h>
#include <torch/version.h>

#include <iostream>

#include "cli/app.h"
#include "cli/version.h"

namespace shoal::cli {

void AddVersionCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("version", "Print the shoal and LibTorch versions");
  cmd->callback([] {
    std::cout << "shoal " << SHOAL_VERSION << "\n"
              << "libtorch " << TORCH_VERSION << "\n"
              << "cuda devices " << torch::cuda::device_count() << "\n";
  });
}

}  // namespace shoal::cli
