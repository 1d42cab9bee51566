// Data-parallel gradient synchronisation: gradients are averaged across ranks in buckets of about
// `bucket_bytes`, each bucket's allreduce launched from autograd hooks as soon as backward has
// produced all of its gradients, so communication overlaps the rest of backward.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dist/process_group.h"

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}
namespace torch::autograd {
struct Node;
}

namespace shoal::dist {

struct GradSyncOptions {
  int64_t bucket_bytes = int64_t{25} << 20;  ///< the fusion buffer (25 MB, as DDP and Horovod)
  std::string compression = "none";          ///< none, fp16 or bf16: the dtype sent over the wire
};

struct GradSyncStats {
  int64_t steps = 0;            ///< synchronised backward passes
  int64_t bytes = 0;            ///< bytes reduced per step (as sent)
  int buckets = 0;
  double finish_wait_s = 0;     ///< time spent in Finish() waiting for allreduces after backward
};

class GradientSync {
 public:
  /// `params`: the trainable parameters, in the model's order; buckets fill in reverse order
  /// (the order backward produces gradients in). Hooks each one's gradient accumulator, and makes
  /// each .grad a view into its bucket (as DDP's gradient_as_bucket_view), so neither backward
  /// nor the average copies gradients.
  GradientSync(std::shared_ptr<Group> group, std::vector<at::Tensor> params, GradSyncOptions options = {});
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  /// Before a backward pass: whether its gradients are to be synchronised. With gradient
  /// accumulation, only the last micro-step's backward is; the others only accumulate locally.
  void Prepare(bool sync);
  /// Optional, between Prepare() and backward: returns `loss` / world size, so that backward
  /// produces gradients already divided for the average and Finish() need not divide them (a pass
  /// over every gradient saved; the sum of pre-divided gradients is the average, exactly so when
  /// the world size is a power of two). Either every backward pass since the last Finish() goes
  /// through it or none does: a mix throws InvalidError, as the accumulated sum would be wrong.
  at::Tensor ScaleLoss(const at::Tensor& loss);
  /// After a synchronised backward pass: launches the buckets not launched yet (parameters
  /// without a gradient count as zero), waits for all, and leaves each parameter's .grad the
  /// average over ranks.
  void Finish();

  const GradSyncStats& stats() const { return stats_; }
  /// The buckets as parameter index lists, in launch order.
  std::vector<std::vector<size_t>> buckets() const;

 private:
  struct Bucket;
  void OnGradient(size_t param);
  bool Predivided() const;  // every pass since the last Finish() scaled its loss
  at::Tensor Slot(size_t param) const;  // the parameter's place in its bucket
  void LaunchReady();
  void Launch(Bucket& bucket);

  std::shared_ptr<Group> group_;
  std::vector<at::Tensor> params_;
  GradSyncOptions options_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<std::pair<size_t, size_t>> where_;  // param -> (bucket, offset in elements)
  std::vector<at::Tensor> slots_;                 // param -> its place in its bucket
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive for the hooks
  std::vector<uintptr_t> hooks_;
  std::vector<char> fired_;  // whose hook fired in this pass
  size_t next_launch_ = 0;
  bool syncing_ = false;
  // Whether the backward passes since the last Finish() had their loss scaled: none yet, all, or
  // not all (the current pass's own choice is made by ScaleLoss() after Prepare()).
  int passes_ = 0;
  int scaled_passes_ = 0;
  bool pass_scaled_ = false;
  GradSyncStats stats_;
};

/// Copies rank 0's floating-point buffers (BatchNorm's running statistics) to every rank in one
/// broadcast, as DDP does before each forward pass, so that the ranks' models stay identical.
void BroadcastBuffers(Group& group, const std::vector<at::Tensor>& buffers);

/// Checks that every rank holds the same parameters and buffers (names, shapes and dtypes), then
/// copies rank 0's values, and its optimizer state when `optimizer` is given, to every rank.
/// Throws InvalidError on every rank, naming the first difference and the rank, when the models
/// differ.
void BroadcastModel(Group& group, torch::nn::Module& module, torch::optim::Optimizer* optimizer);

}  // namespace shoal::dist
