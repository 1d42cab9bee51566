// `shoal data bench` and `shoal data show`: the loader from the command line.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/app.h"
#include "data/loader.h"
#include "data/preview.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::cli {

namespace {

struct LoaderArgs {
  data::LoaderOptions options;
  bool no_shuffle = false;
  bool no_normalize = false;
  std::string remainder = "pad";
  std::string on_corrupt = "error";
  int64_t max_inflight_mib = 256;
};

void AddLoaderOptions(CLI::App* cmd, LoaderArgs& a) {
  data::LoaderOptions& o = a.options;
  cmd->add_option("TABLE", o.table, "The Delta table of images (for example from 'shoal ingest')")->required();
  cmd->add_option("--version", o.version, "Table version to read (default: the latest)");
  cmd->add_option("--where", o.where, "Rows to read, as \"col op literal [and|or ...]\" (default: all)");
  cmd->add_option("--batch-size", o.batch_size, "Rows per batch")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--threads", o.threads, "Decode threads")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--seed", o.seed, "Shuffle and augmentation seed")->capture_default_str();
  cmd->add_flag("--no-shuffle", a.no_shuffle, "Read rows in table order");
  cmd->add_option("--shuffle-buffer", o.shuffle_buffer, "Rows mixed across row groups")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--rank", o.rank, "This rank (0-based)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--world-size", o.world_size, "Number of ranks sharing the table")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--remainder", a.remainder, "Rows left over by the world size: pad (wrap around) or drop")
      ->check(CLI::IsMember({"pad", "drop"}))
      ->capture_default_str();
  cmd->add_flag("--drop-last", o.drop_last, "Drop each epoch's last, short batch");
  cmd->add_option("--prefetch", o.prefetch, "Batches decoded ahead (0: 2 per thread)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--max-inflight-mb", a.max_inflight_mib, "Bound on the memory of batches in flight and the row groups they read, MiB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--on-corrupt", a.on_corrupt, "A corrupt image: error (stop, naming it) or skip (count it)")
      ->check(CLI::IsMember({"error", "skip"}))
      ->capture_default_str();
  data::TransformOptions& t = o.transform;
  cmd->add_option("--channels", t.channels, "Output channels, 1 or 3 (default: as stored)")->check(CLI::IsMember({0, 1, 3}));
  cmd->add_option("--resize", t.resize, "Resize the shorter side to N pixels")->check(CLI::Range(0, 16384));
  cmd->add_option("--center-crop", t.center_crop, "Crop N x N from the centre")->check(CLI::Range(0, 16384));
  cmd->add_option("--random-resized-crop", t.random_resized_crop, "Random resized crop to N x N (scale 0.08-1, ratio 3/4-4/3)")
      ->check(CLI::Range(0, 16384));
  cmd->add_flag("--flip", t.horizontal_flip, "Random horizontal flip");
  cmd->add_flag("--no-normalize", a.no_normalize, "Scale pixels to [0, 1] only (default: normalize with the table's mean and std)");
}

void Finish(LoaderArgs& a) {
  a.options.shuffle = !a.no_shuffle;
  a.options.transform.normalize = !a.no_normalize;
  a.options.remainder = a.remainder == "drop" ? data::Remainder::kDrop : data::Remainder::kPad;
  a.options.on_corrupt = a.on_corrupt == "skip" ? data::OnCorrupt::kSkip : data::OnCorrupt::kError;
  a.options.max_inflight_bytes = a.max_inflight_mib << 20;
}

double ResidentMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

double PeakResidentMiB() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// v with `digits` decimals; dividing by a power of ten gives the double nearest the decimal.
double Round(double v, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

void Bench(LoaderArgs& a, int64_t epochs, int64_t max_batches) {
  Finish(a);
  a.options.num_epochs = epochs;
  auto setup_start = std::chrono::steady_clock::now();
  data::Loader loader(a.options);
  double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
  std::cerr << "shoal data bench: " << loader.rows() << " rows, rank " << a.options.rank << " of "
            << a.options.world_size << " reads " << loader.rows_per_rank() << " rows in " << loader.batches_per_epoch()
            << " batches an epoch; " << a.options.threads << " decode threads (setup " << Round(setup, 3) << " s)\n";
  nlohmann::ordered_json by_epoch = nlohmann::ordered_json::array();
  auto start = std::chrono::steady_clock::now();
  auto epoch_start = start;
  auto last_report = start;
  int64_t batches = 0, samples = 0, epoch_samples = 0, epoch = 0;
  double wait_before = 0;
  auto close_epoch = [&](auto now) {
    double seconds = std::chrono::duration<double>(now - epoch_start).count();
    data::LoaderStats stats = loader.stats();
    double wait_share = seconds > 0 ? (stats.wait_seconds - wait_before) / seconds : 0;
    double rss = ResidentMiB();
    std::cerr << "shoal data bench: epoch " << epoch + 1 << ": " << epoch_samples << " samples in " << Round(seconds, 3)
              << " s (" << std::llround(epoch_samples / std::max(seconds, 1e-9)) << " samples/s), RSS "
              << Round(rss, 1) << " MiB\n";
    by_epoch.push_back({{"epoch", epoch},
                        {"samples", epoch_samples},
                        {"seconds", Round(seconds, 6)},
                        {"samples_per_s", Round(epoch_samples / std::max(seconds, 1e-9), 1)},
                        {"consumer_wait_share", Round(wait_share, 3)},
                        {"rss_mib", Round(rss, 1)}});
    wait_before = stats.wait_seconds;
    epoch_start = now;
    epoch_samples = 0;
  };
  while (max_batches <= 0 || batches < max_batches) {
    std::optional<data::Batch> batch = loader.Next();
    if (!batch) break;
    auto now = std::chrono::steady_clock::now();
    if (batch->epoch != epoch) {
      close_epoch(now);
      epoch = batch->epoch;
    }
    ++batches;
    samples += batch->size;
    epoch_samples += batch->size;
    if (std::chrono::duration<double>(now - last_report).count() >= 5) {
      std::cerr << "shoal data bench: epoch " << epoch + 1 << ", batch " << batch->index + 1 << " / "
                << loader.batches_per_epoch() << "\n";
      last_report = now;
    }
  }
  auto end = std::chrono::steady_clock::now();
  if (epoch_samples > 0) close_epoch(end);
  double seconds = std::chrono::duration<double>(end - start).count();
  data::LoaderStats stats = loader.stats();
  nlohmann::ordered_json out;
  out["samples_per_s"] = Round(samples / std::max(seconds, 1e-9), 1);
  out["batches"] = batches;
  out["seconds"] = Round(seconds, 6);
  out["samples"] = samples;
  out["skipped"] = stats.skipped;
  out["batch_size"] = a.options.batch_size;
  out["threads"] = a.options.threads;
  out["rank"] = a.options.rank;
  out["world_size"] = a.options.world_size;
  out["image_shape"] = loader.image_shape();
  out["setup_seconds"] = Round(setup, 6);
  out["peak_rss_mib"] = Round(PeakResidentMiB(), 1);
  out["decode_wait_seconds"] = Round(stats.worker_wait_seconds, 3);
  out["epochs"] = by_epoch;
  std::cout << out.dump() << std::endl;
}

void Show(LoaderArgs& a, int n, int columns, const std::string& out_path) {
  Finish(a);
  // The picture shows pixels, so the values stay in [0, 1]: the transforms run, normalizing not.
  a.options.transform.normalize = false;
  a.options.batch_size = n;
  a.options.num_epochs = 1;
  data::Loader loader(a.options);
  std::optional<data::Batch> batch = loader.Next();
  if (!batch || batch->size == 0) throw NotFoundError("table '" + a.options.table + "' gave no samples to show");
  const std::vector<int>& shape = loader.image_shape();
  const int c = shape[0], h = shape[1], w = shape[2];
  std::vector<data::Image> tiles;
  std::vector<std::string> captions;
  nlohmann::ordered_json labels = nlohmann::ordered_json::array();
  for (int64_t i = 0; i < batch->size; ++i) {
    data::Image tile{w, h, c, {}};
    tile.pixels.resize(static_cast<size_t>(w) * h * c);
    const float* src = batch->images.data() + i * static_cast<int64_t>(c) * h * w;
    for (int ch = 0; ch < c; ++ch) {
      for (int p = 0; p < h * w; ++p) {
        float v = std::clamp(src[ch * h * w + p], 0.0f, 1.0f);
        tile.pixels[static_cast<size_t>(p) * c + ch] = static_cast<uint8_t>(std::lround(v * 255));
      }
    }
    tiles.push_back(std::move(tile));
    std::string caption;
    if (!batch->labels.empty()) {
      int64_t label = batch->labels[i];
      const auto& names = loader.class_names();
      caption = std::to_string(label);
      if (label >= 0 && label < static_cast<int64_t>(names.size())) caption += " " + names[label];
      labels.push_back(label);
    }
    captions.push_back(caption);
  }
  std::string png = data::EncodePng(data::RenderGrid(tiles, captions, columns));
  WriteFileAtomically(out_path, png);
  nlohmann::ordered_json out;
  out["out"] = out_path;
  out["samples"] = batch->size;
  out["image_shape"] = shape;
  out["labels"] = labels;
  out["ids"] = batch->ids;
  std::cout << out.dump() << "\n";
}

}  // namespace

void AddDataCommands(CLI::App& app) {
  CLI::App* data = app.add_subcommand("data", "Read tables through the loader: throughput, and a look at samples");
  data->require_subcommand(1);
  data->footer(
      "The loader shards rows by rank (every rank gets the same number of batches), shuffles them by\n"
      "(seed, epoch), decodes PNG/JPEG/raw images in threads and applies the transforms. Defaults for\n"
      "columns, shape, mean and std come from the table's \"shoal.decode\" description (shoal ingest).");

  auto bench = std::make_shared<LoaderArgs>();
  bench->options.batch_size = 256;
  auto epochs = std::make_shared<int64_t>(1);
  auto max_batches = std::make_shared<int64_t>(0);
  CLI::App* b = data->add_subcommand("bench", "Measure loader throughput; the last line is JSON with samples_per_s, batches, seconds");
  AddLoaderOptions(b, *bench);
  b->add_option("--epochs", *epochs, "Epochs to read")->check(CLI::PositiveNumber)->capture_default_str();
  b->add_option("--max-batches", *max_batches, "Stop after this many batches (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  b->footer("Progress and per-epoch figures go to stderr. The JSON also has per-epoch samples/s and RSS, and peak RSS.");
  b->callback([bench, epochs, max_batches] { Bench(*bench, *epochs, *max_batches); });

  auto show = std::make_shared<LoaderArgs>();
  auto n = std::make_shared<int>(16);
  auto columns = std::make_shared<int>(0);
  auto out = std::make_shared<std::string>();
  CLI::App* s = data->add_subcommand("show", "Write a PNG grid of decoded samples, after transforms, with their labels");
  AddLoaderOptions(s, *show);
  s->add_option("--n", *n, "Samples to show")->check(CLI::Range(1, 1024))->capture_default_str();
  s->add_option("--columns", *columns, "Tiles per row (default: about the square root of n)")->check(CLI::NonNegativeNumber);
  s->add_option("--out", *out, "The PNG file to write")->required();
  s->callback([show, n, columns, out] {
    int cols = *columns > 0 ? *columns : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(*n))));
    Show(*show, *n, cols, *out);
  });
}

}  // namespace shoal::cli
