// `shoal-torch`: the commands that need LibTorch, in their own executable so that `shoal` itself
// never loads it. `shoal train|test|predict ...` runs it with the same arguments.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/app.h"
#include "train/config.h"
#include "train/run.h"
#include "train/safetensors.h"
#include "util/error.h"
#include "util/file.h"
#include "util/memory.h"

namespace {

nlohmann::json LoadConfig(const std::string& path, const std::vector<std::string>& overrides) {
  nlohmann::json config = nlohmann::json::object();
  if (!path.empty()) {
    std::vector<uint8_t> bytes = shoal::ReadFile(path);
    config = shoal::train::ParseYaml(std::string(bytes.begin(), bytes.end()), path);
  }
  shoal::train::ApplyOverrides(config, overrides);
  return config;
}

int Main(int argc, char** argv) {
  CLI::App app("shoal-torch: the shoal commands that need LibTorch (run them as 'shoal COMMAND')", "shoal");
  app.require_subcommand(1);
  app.add_subcommand("devices", "Print the number of CUDA devices LibTorch sees")->callback([] {
    std::cout << torch::cuda::device_count() << "\n";
  });

  std::string config_path, ckpt, table, out;
  CLI::App* train = app.add_subcommand("train", "Train a model from a YAML config; the last line is JSON with the final metrics and the checkpoint");
  train->add_option("--config", config_path, "YAML with sections model, data, optimizer, trainer, callbacks (docs/train.md)");
  train->allow_extras();
  train->footer("Overrides follow as --section.key=value, e.g. --trainer.max_epochs=5 --data.root=DIR --optimizer.lr=0.1.\n"
                "--trainer.ckpt_path=last resumes from the last checkpoint.");
  train->callback([&] {
    nlohmann::json config = LoadConfig(config_path, train->remaining());
    nlohmann::json result = shoal::train::RunTrain(config);
    if (!result.is_null()) std::cout << result.dump() << std::endl;
  });

  CLI::App* test = app.add_subcommand("test", "Test a checkpoint on the config's test table; prints JSON with test_loss and test_acc");
  test->add_option("--ckpt", ckpt, "The checkpoint file")->required();
  test->add_option("--config", config_path, "The YAML config the model was trained with");
  test->allow_extras();
  test->callback([&] {
    nlohmann::json config = LoadConfig(config_path, test->remaining());
    std::cout << shoal::train::RunTest(config, ckpt).dump() << std::endl;
  });

  CLI::App* predict = app.add_subcommand("predict", "Predict the classes of a table's rows into a new Delta table (id, prediction)");
  predict->add_option("--ckpt", ckpt, "The checkpoint file")->required();
  predict->add_option("--table", table, "The table of images to classify")->required();
  predict->add_option("--out", out, "The Delta table to create")->required();
  predict->add_option("--config", config_path, "The YAML config the model was trained with");
  predict->allow_extras();
  predict->callback([&] {
    nlohmann::json config = LoadConfig(config_path, predict->remaining());
    std::cout << shoal::train::RunPredict(config, ckpt, table, out).dump() << std::endl;
  });

  CLI::App* exporter = app.add_subcommand("export", "Export a checkpoint's weights as safetensors");
  exporter->add_option("--ckpt", ckpt, "The checkpoint file")->required();
  exporter->add_option("--out", out, "The .safetensors file to write")->required();
  exporter->callback([&] {
    int count = shoal::train::ExportSafetensors(ckpt, out);
    std::cout << nlohmann::json{{"out", out}, {"tensors", count}, {"checkpoint", ckpt}}.dump() << std::endl;
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "shoal: usage error: " << e.what() << "\nRun 'shoal COMMAND --help'.\n";
    return shoal::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "shoal: error: " << e.what() << "\n";
    return shoal::cli::kExitFailure;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Tensors of a training step come from the heap, not fresh mappings that fault in every step.
  shoal::TuneAllocatorForBatches();
  return Main(argc, argv);
}
