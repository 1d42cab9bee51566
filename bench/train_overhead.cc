// The Trainer's per-epoch overhead against a raw LibTorch loop, both on in-memory data: the same
// SimpleCNN, Adam and batch size. The raw loop trains on batches decoded into memory before its
// clock starts. The Trainer reads the table through the loader with its cache on: its first
// epoch decodes (and is not counted, as the raw loop's decoding is not), later epochs copy
// shuffled rows from memory while it logs and runs its callbacks. No validation, no checkpoints.
// The machine is noisy, so the two alternate: after each Trainer epoch, a callback runs one raw
// epoch (its own model and optimizer), and each pair of neighbours gives a ratio; the median
// ratio and the ratio of the sums are printed, as one JSON line.
//   shoal_train_overhead TABLE [--epochs N] [--batch-size N]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "data/loader.h"
#include "models/zoo.h"
#include "train/batch_tensors.h"
#include "train/network_module.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/memory.h"

namespace {

class Classifier : public shoal::train::NetworkModule {
 public:
  using NetworkModule::NetworkModule;
  std::unique_ptr<torch::optim::Optimizer> configure_optimizers() override {
    return std::make_unique<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(1e-3));
  }
};

class TableData : public shoal::train::DataModule {
 public:
  explicit TableData(shoal::data::LoaderOptions o) : o_(std::move(o)) {}
  shoal::data::LoaderOptions train_loader() override { return o_; }

 private:
  shoal::data::LoaderOptions o_;
};

std::shared_ptr<Classifier> Model() {
  torch::manual_seed(42);
  shoal::models::ModelOptions m;
  return std::make_shared<Classifier>(shoal::models::CreateModel(m));
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Each training epoch's seconds, from its start to its end; then one raw epoch, timed apart.
class Alternate : public shoal::train::Callback {
 public:
  explicit Alternate(std::function<double()> raw_epoch) : raw_epoch_(std::move(raw_epoch)) {}
  std::string name() const override { return "Alternate"; }
  void on_train_epoch_start(shoal::train::Trainer&) override { start_ = std::chrono::steady_clock::now(); }
  void on_train_epoch_end(shoal::train::Trainer&) override {
    trainer.push_back(Since(start_));
    raw.push_back(raw_epoch_());
  }
  std::vector<double> trainer, raw;

 private:
  std::function<double()> raw_epoch_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TABLE [--epochs N] [--batch-size N]\n", argv[0]);
    return 2;
  }
  shoal::TuneAllocatorForBatches();
  int epochs = 2;
  int64_t batch_size = 128;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--batch-size") == 0) batch_size = std::atoll(argv[++i]);
  }
  try {
    shoal::data::LoaderOptions o;
    o.table = argv[1];
    o.batch_size = batch_size;
    o.seed = 42;
    o.threads = 2;
    // Raw: every batch of epoch 0 decoded into memory first, then replayed each epoch.
    std::vector<shoal::train::TensorBatch> batches;
    {
      shoal::data::Loader loader(o);
      while (auto b = loader.Next()) batches.push_back(shoal::train::ToTensors(std::move(*b)));
    }
    auto raw_model = Model();
    raw_model->train();
    auto optimizer = raw_model->configure_optimizers();
    auto raw_epoch = [&] {
      auto start = std::chrono::steady_clock::now();
      for (const auto& b : batches) {
        at::Tensor loss = torch::nn::functional::cross_entropy(raw_model->forward(b.images), b.labels);
        optimizer->zero_grad();
        loss.backward();
        optimizer->step();
      }
      return Since(start);
    };
    // The Trainer on the same table, cached: epoch 0 fills the cache, epochs 1..N count.
    shoal::train::TrainerOptions t;
    t.max_epochs = epochs + 1;
    t.num_sanity_val_steps = 0;
    t.enable_progress_bar = false;
    t.seed = 42;
    auto alternate = std::make_shared<Alternate>(raw_epoch);
    shoal::train::Trainer trainer(t, {alternate});
    auto model = Model();
    o.cache = true;
    TableData data(o);
    trainer.fit(*model, data);
    std::vector<double> ratios;
    double trainer_sum = 0, raw_sum = 0;
    std::string pairs;
    for (size_t e = 1; e < alternate->trainer.size(); ++e) {
      // A Trainer epoch against the mean of the raw epochs before and after it.
      const double raw = (alternate->raw[e - 1] + alternate->raw[e]) / 2;
      ratios.push_back(alternate->trainer[e] / raw);
      trainer_sum += alternate->trainer[e];
      raw_sum += raw;
      char pair[64];
      std::snprintf(pair, sizeof pair, "%s[%.3f,%.3f]", pairs.empty() ? "" : ",", alternate->trainer[e], raw);
      pairs += pair;
    }
    std::sort(ratios.begin(), ratios.end());
    const double median = ratios.size() % 2 ? ratios[ratios.size() / 2] : (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]) / 2;
    std::printf("{\"trainer_vs_raw_seconds\":[%s],\"trainer_first_epoch_seconds\":%.3f,\"overhead_median\":%.4f,"
                "\"overhead_of_sums\":%.4f,\"batches\":%zu,\"epochs\":%d}\n",
                pairs.c_str(), alternate->trainer.front(), median - 1, trainer_sum / raw_sum - 1, batches.size(), epochs);
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal_train_overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}
