// Data-parallel benchmarks, run under `shoal launch` (bench/dist_compare.py drives them). Rank 0
// prints one JSON line.
//   shoal_dist_bench scaling --model simple_cnn|resnet18_cifar [--batch B] [--steps N]
//       training steps on synthetic images at 1 thread a process: samples/s over all ranks.
//   shoal_dist_bench bandwidth --model M [--reps N]
//       GradientSync of the model's gradients against one raw c10d Gloo allreduce of the same
//       bytes (backward made trivial, so the time is the synchronisation's).
//   shoal_dist_bench overlap --model M [--batch B] [--reps N] [--bucket-mb MB]
//       how much of the gradient communication hides behind backward: with T_b the step without
//       synchronisation, T_c the raw allreduce of the gradients, T_s the synchronised step,
//       hidden = (T_b + T_c - T_s) / T_c.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "dist/cluster.h"
#include "dist/grad_sync.h"
#include "dist/process_group.h"
#include "models/zoo.h"
#include "util/memory.h"

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string Arg(int argc, char** argv, const std::string& flag, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return fallback;
}

struct Setup {
  std::shared_ptr<shoal::models::Network> net;
  at::Tensor images, labels;
};

Setup Make(const std::string& model, int64_t batch) {
  shoal::models::ModelOptions o;
  if (model == "simple_cnn") {
    o.name = "simple_cnn";
    o.in_channels = 1;
    o.image_size = 28;
  } else if (model == "resnet18_cifar") {
    o.name = "resnet18";
    o.stem = "cifar";
    o.in_channels = 3;
    o.image_size = 32;
  } else {
    throw std::runtime_error("unknown model '" + model + "' (simple_cnn, resnet18_cifar)");
  }
  Setup s;
  torch::manual_seed(1);
  s.net = shoal::models::CreateModel(o);
  s.images = torch::randn({batch, o.in_channels, o.image_size, o.image_size});
  s.labels = torch::randint(0, 10, {batch});
  return s;
}

std::vector<at::Tensor> Trainable(torch::nn::Module& m) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : m.parameters()) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

int64_t Bytes(const std::vector<at::Tensor>& params) {
  int64_t n = 0;
  for (const at::Tensor& p : params) n += p.numel() * 4;
  return n;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: shoal_dist_bench scaling|bandwidth|overlap --model M [options]\n";
    return 2;
  }
  const std::string mode = argv[1];
  const std::string model = Arg(argc, argv, "--model", "simple_cnn");
  torch::set_num_threads(1);
  shoal::dist::ClusterEnv env = shoal::dist::DetectClusterEnv();
  std::shared_ptr<shoal::dist::Group> group;
  if (env.distributed()) group = shoal::dist::Group::Create(env);
  const int world = env.world_size;
  nlohmann::json out{{"mode", mode}, {"model", model}, {"world_size", world}};

  if (mode == "scaling") {
    const int64_t batch = std::stoll(Arg(argc, argv, "--batch", "64"));
    const int steps = std::stoi(Arg(argc, argv, "--steps", "30"));
    Setup s = Make(model, batch);
    torch::optim::SGD optimizer(s.net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    std::unique_ptr<shoal::dist::GradientSync> sync;
    if (group) {
      shoal::dist::BroadcastModel(*group, *s.net, &optimizer);
      sync = std::make_unique<shoal::dist::GradientSync>(group, Trainable(*s.net));
    }
    // Where a step's time goes, summed over the timed steps: forward and backward, waiting in
    // GradientSync::Finish, the optimizer.
    double compute_s = 0, finish_s = 0, optimizer_s = 0;
    auto step = [&] {
      auto t0 = Clock::now();
      optimizer.zero_grad();
      at::Tensor loss = torch::nn::functional::cross_entropy(s.net->forward(s.images), s.labels);
      if (sync) {
        sync->Prepare(true);
        loss = sync->ScaleLoss(loss);  // as the Trainer does
      }
      loss.backward();
      auto t1 = Clock::now();
      if (sync) sync->Finish();
      auto t2 = Clock::now();
      optimizer.step();
      compute_s += std::chrono::duration<double>(t1 - t0).count();
      finish_s += std::chrono::duration<double>(t2 - t1).count();
      optimizer_s += Since(t2);
    };
    for (int i = 0; i < 3; ++i) step();  // warm up
    compute_s = finish_s = optimizer_s = 0;
    if (group) group->Barrier("start");
    auto start = Clock::now();
    for (int i = 0; i < steps; ++i) step();
    if (group) group->Barrier("end");
    const double t = Since(start);
    out["batch_per_rank"] = batch;
    out["steps"] = steps;
    out["seconds"] = t;
    out["samples_per_s"] = static_cast<double>(world * batch * steps) / t;
    out["ms_per_step"] = {{"compute", compute_s * 1e3 / steps},
                          {"finish", finish_s * 1e3 / steps},
                          {"optimizer", optimizer_s * 1e3 / steps}};
  } else if (mode == "bandwidth" || mode == "overlap") {
    if (!group) throw std::runtime_error(mode + " needs 2 or more ranks (run it under shoal launch)");
    const int reps = std::stoi(Arg(argc, argv, "--reps", "10"));
    const int64_t batch = std::stoll(Arg(argc, argv, "--batch", "32"));
    Setup s = Make(model, batch);
    std::vector<at::Tensor> params = Trainable(*s.net);
    shoal::dist::BroadcastModel(*group, *s.net, nullptr);
    shoal::dist::GradSyncOptions sync_options;
    sync_options.bucket_bytes = static_cast<int64_t>(std::stod(Arg(argc, argv, "--bucket-mb", "25")) * 1e6);
    shoal::dist::GradientSync sync(group, params, sync_options);
    // What backward computes: trivial for bandwidth (grad = a constant), the model's for overlap.
    std::vector<at::Tensor> weights;
    for (const at::Tensor& p : params) weights.push_back(torch::randn_like(p));
    auto backward = [&](bool synced) {
      for (const at::Tensor& p : params) p.mutable_grad() = at::Tensor();
      sync.Prepare(synced);
      at::Tensor loss;
      if (mode == "bandwidth") {
        loss = torch::zeros({});
        for (size_t i = 0; i < params.size(); ++i) loss = loss + (params[i] * weights[i]).sum();
      } else {
        loss = torch::nn::functional::cross_entropy(s.net->forward(s.images), s.labels);
      }
      loss = sync.ScaleLoss(loss);  // as the Trainer does, in every pass
      loss.backward();
      if (synced) sync.Finish();
    };
    at::Tensor flat = torch::randn({Bytes(params) / 4});
    auto time = [&](auto&& fn) {
      fn();  // warm up
      std::vector<double> t;
      for (int i = 0; i < reps; ++i) {
        group->Barrier("rep");
        auto start = Clock::now();
        fn();
        t.push_back(Since(start));
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];  // the median
    };
    const double raw = time([&] { group->AllReduce(flat, shoal::dist::Reduce::kSum, "raw allreduce"); });
    // Steps with and without synchronisation alternate, so that drift on a noisy machine hits both.
    backward(false);
    backward(true);
    std::vector<double> alone_t, synced_t;
    for (int i = 0; i < reps; ++i) {
      for (bool synced : {false, true}) {
        group->Barrier("rep");
        auto start = Clock::now();
        backward(synced);
        (synced ? synced_t : alone_t).push_back(Since(start));
      }
    }
    std::sort(alone_t.begin(), alone_t.end());
    std::sort(synced_t.begin(), synced_t.end());
    const double alone = alone_t[alone_t.size() / 2], synced = synced_t[synced_t.size() / 2];
    out["bytes"] = Bytes(params);
    out["buckets"] = sync.stats().buckets;
    out["raw_allreduce_s"] = raw;
    out["backward_s"] = alone;
    out["synced_backward_s"] = synced;
    if (mode == "bandwidth") {
      const double sync_s = std::max(1e-9, synced - alone);
      out["sync_s"] = sync_s;
      out["raw_gbit_per_s"] = Bytes(params) * 8 / raw / 1e9;
      out["sync_gbit_per_s"] = Bytes(params) * 8 / sync_s / 1e9;
      out["ratio"] = raw / sync_s;
    } else {
      out["hidden_share"] = std::clamp((alone + raw - synced) / raw, 0.0, 1.0);
    }
  } else {
    throw std::runtime_error("unknown mode '" + mode + "' (scaling, bandwidth, overlap)");
  }
  if (env.rank == 0) std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  shoal::TuneAllocatorForBatches();  // as shoal train: a step's tensors are reused heap, not fresh pages
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "shoal_dist_bench: error: " << e.what() << "\n";
    return 1;
  }
}
