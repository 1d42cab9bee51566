// Fills a tracking store for the server benchmarks (bench/track_compare.py): an experiment
// "bench" with N runs, each with 6 params, 3 tags and 4 metrics of 10 steps; val_loss is spread
// over [0.2, 1.0) so a filter such as `metrics.val_loss < 0.5` keeps a known share of them.
// Usage: shoal_track_seed DIR [--runs N]. Prints the experiment id.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>

#include "track/store.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: shoal_track_seed DIR [--runs N]\n";
    return 2;
  }
  int runs = 10000;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::atoi(argv[++i]);
  }
  try {
    auto store = shoal::track::Store::Open(argv[1]);
    const std::string exp = store->CreateExperiment("bench");
    std::mt19937 random(7);
    std::uniform_real_distribution<double> loss(0.2, 1.0);
    const char* optimizers[] = {"sgd", "adam", "adamw"};
    for (int k = 0; k < runs; ++k) {
      shoal::track::RunInfo run = store->CreateRun(exp, "run-" + std::to_string(k), 1700000000000LL + k);
      const double final_loss = loss(random);
      std::vector<shoal::track::Metric> metrics;
      for (int step = 1; step <= 10; ++step) {
        const double f = 1.0 + 1.0 / step;
        metrics.push_back({"val_loss", final_loss * f, 1700000000000LL + k + step, step});
        metrics.push_back({"val_acc", 1.0 - final_loss * f / 2, 1700000000000LL + k + step, step});
        metrics.push_back({"train_loss", final_loss * f * 0.9, 1700000000000LL + k + step, step});
        metrics.push_back({"lr", 0.1 / step, 1700000000000LL + k + step, step});
      }
      store->LogBatch(run.run_id, metrics,
                      {{"lr", std::to_string(0.001 * (1 + k % 10))},
                       {"batch_size", std::to_string(32 << (k % 4))},
                       {"optimizer", optimizers[k % 3]},
                       {"model", k % 2 ? "resnet18" : "simple_cnn"},
                       {"epochs", "10"},
                       {"seed", std::to_string(k)}},
                      {{"team", k % 5 ? "vision" : "nlp"}, {"mlflow.user", "bench"}, {"mlflow.source.name", "track_seed"}});
      store->UpdateRun(run.run_id, "FINISHED", 1700000000000LL + k + 100);
      if ((k + 1) % 2000 == 0) std::cerr << "seeded " << (k + 1) << " runs\n";
    }
    std::cout << exp << "\n";
  } catch (const std::exception& e) {
    std::cerr << "shoal_track_seed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
