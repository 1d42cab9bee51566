// `shoal ingest fashion-mnist` and `shoal ingest images`: image data sets into Delta tables.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "cli/app.h"
#include "data/ingest.h"

namespace shoal::cli {

namespace {

struct IngestArgs {
  std::string source;  // the split for fashion-mnist, the folder for images
  data::IngestOptions options;
};

void AddCommonOptions(CLI::App* cmd, IngestArgs& args) {
  cmd->add_option("--out", args.options.out, "The table to create (a directory; it must not exist)")->required();
  cmd->add_option("--image-format", args.options.image_format, "png, jpeg or raw (8-bit pixels, row-major)")
      ->check(CLI::IsMember({"png", "jpeg", "raw"}))
      ->capture_default_str();
  cmd->add_option("--resize", args.options.resize, "Resize every image to N x N (0 keeps the size)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  cmd->add_option("--rows-per-file", args.options.rows_per_file, "Rows per Parquet data file")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void PrintResult(const std::string& table, const data::IngestResult& r) {
  nlohmann::ordered_json out;
  out["table"] = table;
  out["version"] = r.version;
  out["rows"] = r.rows;
  out["files"] = r.files;
  out["decode"] = nlohmann::ordered_json::parse(r.decode_json);
  std::cout << out.dump() << "\n";
}

}  // namespace

void AddIngestCommands(CLI::App& app) {
  CLI::App* ingest = app.add_subcommand("ingest", "Ingest an image data set into a new Delta table");
  ingest->require_subcommand(1);
  ingest->footer(
      "Tables get the columns image (binary), label (int32), label_name (string), id (int64), and a JSON\n"
      "decode description (codec, shape, class names, per-channel mean and std) in their configuration\n"
      "under \"shoal.decode\". Progress goes to stderr; the last line on stdout is a JSON summary.");

  auto fmnist = std::make_shared<IngestArgs>();
  fmnist->source = "train";
  CLI::App* f = ingest->add_subcommand(
      "fashion-mnist", "Fashion-MNIST from Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)");
  f->add_option("--split", fmnist->source, "train (60,000 images) or test (10,000)")
      ->check(CLI::IsMember({"train", "test"}))
      ->capture_default_str();
  AddCommonOptions(f, *fmnist);
  f->callback([fmnist] {
    fmnist->options.progress = [](const std::string& line) { std::cerr << "shoal ingest: " << line << "\n"; };
    PrintResult(fmnist->options.out, data::IngestFashionMnist(fmnist->source, fmnist->options));
  });

  auto images = std::make_shared<IngestArgs>();
  CLI::App* i = ingest->add_subcommand("images", "An ImageFolder tree: DIR/<class>/<JPEG or PNG files>");
  i->add_option("DIR", images->source, "The folder with one subdirectory per class")->required();
  AddCommonOptions(i, *images);
  i->callback([images] {
    images->options.progress = [](const std::string& line) { std::cerr << "shoal ingest: " << line << "\n"; };
    PrintResult(images->options.out, data::IngestImageFolder(images->source, images->options));
  });
}

}  // namespace shoal::cli
