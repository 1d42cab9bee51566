// A worker for the distributed tests, started through `shoal launch` (or alone, as one process).
//   dist_worker equal DIR [--steps N] [--accumulate K] [--compression none|fp16|bf16] [--bucket-bytes B]
//       trains an MLP on a fixed global batch of 16 rows, each rank on its slice, and writes its
//       parameters to DIR/params-<rank>.bin (float32, back to back).
//   dist_worker spin DIR     trains forever; writes DIR/pid-<rank> after its first step.
//   dist_worker mismatch     rank 1 builds a wider model than the others.
//   dist_worker stall        rank 1 sleeps 30 s before its first collective.
#include <torch/torch.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "dist/cluster.h"
#include "dist/grad_sync.h"
#include "dist/process_group.h"

namespace {

struct Mlp : torch::nn::Module {
  explicit Mlp(int hidden) {
    fc1 = register_module("fc1", torch::nn::Linear(20, hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, 4));
  }
  at::Tensor forward(const at::Tensor& x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

std::string Arg(int argc, char** argv, const std::string& flag, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return fallback;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: dist_worker equal|spin|mismatch [DIR] [options]\n";
    return 2;
  }
  const std::string mode = argv[1];
  const std::string dir = argc > 2 ? argv[2] : ".";
  torch::set_num_threads(1);
  shoal::dist::ClusterEnv env = shoal::dist::DetectClusterEnv();
  std::shared_ptr<shoal::dist::Group> group;
  if (env.distributed()) group = shoal::dist::Group::Create(env, {"gloo", std::stod(Arg(argc, argv, "--timeout", "300"))});
  const int rank = env.rank, world = env.world_size;

  if (mode == "stall" && rank == 1) ::sleep(30);
  // Different starting weights on every rank: the broadcast from rank 0 must even them out.
  torch::manual_seed(100 + rank);
  Mlp model(mode == "mismatch" && rank == 1 ? 48 : 32);
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  std::unique_ptr<shoal::dist::GradientSync> sync;
  if (group) {
    shoal::dist::BroadcastModel(*group, model, &optimizer);
    shoal::dist::GradSyncOptions o;
    o.compression = Arg(argc, argv, "--compression", "none");
    o.bucket_bytes = std::stoll(Arg(argc, argv, "--bucket-bytes", std::to_string(int64_t{25} << 20)));
    sync = std::make_unique<shoal::dist::GradientSync>(group, model.parameters(), o);
  }
  // The fixed global batch, the same on every rank.
  torch::manual_seed(7);
  const int64_t global = 16;
  at::Tensor x = torch::randn({global, 20});
  at::Tensor y = torch::randint(0, 4, {global});
  if (global % world != 0) throw std::runtime_error("the world size must divide 16");
  const int64_t share = global / world;
  at::Tensor mx = x.narrow(0, rank * share, share), my = y.narrow(0, rank * share, share);
  const int accumulate = std::stoi(Arg(argc, argv, "--accumulate", "1"));
  if (share % accumulate != 0) throw std::runtime_error("--accumulate must divide each rank's share");
  const int64_t micro = share / accumulate;
  const int steps = mode == "spin" ? INT32_MAX : std::stoi(Arg(argc, argv, "--steps", "20"));
  // Whose losses go through GradientSync::ScaleLoss: every micro-step's, none, or (wrongly) the
  // last one's only.
  const std::string scale_loss = Arg(argc, argv, "--scale-loss", "none");
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    for (int m = 0; m < accumulate; ++m) {
      const bool last = m == accumulate - 1;
      if (sync) sync->Prepare(last);
      at::Tensor logits = model.forward(mx.narrow(0, m * micro, micro));
      at::Tensor loss = torch::nn::functional::cross_entropy(logits, my.narrow(0, m * micro, micro)) / accumulate;
      if (sync && (scale_loss == "all" || (scale_loss == "last" && last))) loss = sync->ScaleLoss(loss);
      loss.backward();
      if (sync && last) sync->Finish();
    }
    optimizer.step();
    if (mode == "spin" && step == 0) {
      std::ofstream(dir + "/pid-" + std::to_string(rank)) << ::getpid() << "\n";
    }
  }
  std::vector<float> values;
  for (const at::Tensor& p : model.parameters()) {
    at::Tensor c = p.detach().contiguous();
    values.insert(values.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  std::ofstream out(dir + "/params-" + std::to_string(rank) + ".bin", std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (sync) std::cout << "buckets " << sync->stats().buckets << " steps " << sync->stats().steps << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "dist_worker: error: " << e.what() << "\n";
    return 1;
  }
}
