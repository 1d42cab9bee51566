// The Trainer's per-epoch overhead against a raw LibTorch loop, both on in-memory data: the same
// SimpleCNN, Adam and batch size. The raw loop trains on batches decoded into memory before its
// clock starts. The Trainer reads the table through the loader with its cache on: its first
// epoch decodes (and is not counted, as the raw loop's decoding is not), later epochs copy
// shuffled rows from memory while it logs and runs its callbacks. No validation, no checkpoints.
// The raw loop runs before and after the Trainer, and its mean counts (the machine is noisy).
// Prints one JSON line.
//   shoal_train_overhead TABLE [--epochs N] [--batch-size N]
#include <torch/torch.h>

#include <chrono>
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

// Each training epoch's seconds, from its start to its end.
class EpochTimer : public shoal::train::Callback {
 public:
  std::string name() const override { return "EpochTimer"; }
  void on_train_epoch_start(shoal::train::Trainer&) override { start_ = std::chrono::steady_clock::now(); }
  void on_train_epoch_end(shoal::train::Trainer&) override { seconds.push_back(Since(start_)); }
  std::vector<double> seconds;

 private:
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
    auto raw_epoch = [&] {
      auto raw_model = Model();
      raw_model->train();
      auto optimizer = raw_model->configure_optimizers();
      auto start = std::chrono::steady_clock::now();
      for (int e = 0; e < epochs; ++e) {
        for (const auto& b : batches) {
          at::Tensor loss = torch::nn::functional::cross_entropy(raw_model->forward(b.images), b.labels);
          optimizer->zero_grad();
          loss.backward();
          optimizer->step();
        }
      }
      return Since(start) / epochs;
    };
    const double raw_before = raw_epoch();
    // The Trainer on the same table, cached: epoch 0 fills the cache, epochs 1..N count.
    shoal::train::TrainerOptions t;
    t.max_epochs = epochs + 1;
    t.num_sanity_val_steps = 0;
    t.enable_progress_bar = false;
    t.seed = 42;
    auto timer = std::make_shared<EpochTimer>();
    shoal::train::Trainer trainer(t, {timer});
    auto model = Model();
    o.cache = true;
    TableData data(o);
    trainer.fit(*model, data);
    double framework = 0;
    for (size_t e = 1; e < timer->seconds.size(); ++e) framework += timer->seconds[e];
    framework /= static_cast<double>(timer->seconds.size() - 1);
    const double raw_after = raw_epoch();
    const double raw = (raw_before + raw_after) / 2;
    std::printf("{\"raw_epoch_seconds\":%.3f,\"raw_before\":%.3f,\"raw_after\":%.3f,\"trainer_epoch_seconds\":%.3f,"
                "\"trainer_first_epoch_seconds\":%.3f,\"overhead\":%.4f,\"batches\":%zu,\"epochs\":%d}\n",
                raw, raw_before, raw_after, framework, timer->seconds.front(), framework / raw - 1, batches.size(), epochs);
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal_train_overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}
