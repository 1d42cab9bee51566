#include "dist/grad_sync.h"

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <chrono>
#include <sstream>

#include "util/error.h"

namespace shoal::dist {

struct GradientSync::Bucket {
  std::vector<size_t> params;
  at::Tensor flat;  // float32, the parameters' gradients back to back
  size_t ready = 0;
  at::Tensor wire;  // what is sent: flat itself, or a compressed copy
  Pending pending;
};

GradientSync::GradientSync(std::shared_ptr<Group> group, std::vector<at::Tensor> params, GradSyncOptions options)
    : group_(std::move(group)), params_(std::move(params)), options_(std::move(options)) {
  if (options_.compression != "none" && options_.compression != "fp16" && options_.compression != "bf16") {
    throw InvalidError("unknown gradient compression '" + options_.compression + "' (known: none, fp16, bf16)");
  }
  if (options_.bucket_bytes <= 0) throw InvalidError("the gradient bucket size must be positive");
  if (options_.compression == "bf16" && group_->backend() == "gloo") {
    throw UnsupportedError("bf16 gradient compression needs the nccl backend: Gloo sums float32 and float16 only "
                           "(use fp16 on CPU)");
  }
  where_.resize(params_.size());
  // Buckets fill from the last parameter back: backward produces the last layers' gradients first.
  int64_t filled = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const at::Tensor& p = params_[k];
    if (p.scalar_type() != at::kFloat) {
      throw UnsupportedError("gradient synchronisation takes float32 parameters; parameter " + std::to_string(k) + " is " +
                             std::string(c10::toString(p.scalar_type())));
    }
    const int64_t bytes = p.numel() * 4;
    if (buckets_.empty() || (filled + bytes > options_.bucket_bytes && filled > 0)) {
      buckets_.push_back(std::make_unique<Bucket>());
      filled = 0;
    }
    Bucket& b = *buckets_.back();
    int64_t offset = 0;
    for (size_t q : b.params) offset += params_[q].numel();
    where_[k] = {buckets_.size() - 1, static_cast<size_t>(offset)};
    b.params.push_back(k);
    filled += bytes;
  }
  for (auto& b : buckets_) {
    int64_t n = 0;
    for (size_t q : b->params) n += params_[q].numel();
    b->flat = at::zeros({n}, params_[b->params.front()].options());
    stats_.bytes += n * (options_.compression == "none" ? 4 : 2);
  }
  stats_.buckets = static_cast<int>(buckets_.size());
  // The slots share their bucket's memory without being autograd views of it, so that an
  // optimizer's zero_grad() may detach them in place; each keeps its bucket alive.
  for (size_t k = 0; k < params_.size(); ++k) {
    auto [bi, offset] = where_[k];
    at::Tensor flat = buckets_[bi]->flat;
    slots_.push_back(at::from_blob(flat.data_ptr<float>() + offset, params_[k].sizes(), [flat](void*) {}, flat.options()));
  }
  // A hook after each parameter's gradient accumulator: it runs once backward has added this
  // pass's gradient into .grad, which is a view into the bucket (so nothing is copied).
  for (size_t k = 0; k < params_.size(); ++k) {
    std::shared_ptr<torch::autograd::Node> accumulator = torch::autograd::impl::grad_accumulator(params_[k]);
    if (!accumulator) throw InvalidError("parameter " + std::to_string(k) + " is not a leaf that takes gradients");
    hooks_.push_back(accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, k](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          OnGradient(k);
          return outputs;
        })));
    accumulators_.push_back(std::move(accumulator));
  }
}

GradientSync::~GradientSync() {
  for (size_t k = 0; k < accumulators_.size() && k < hooks_.size(); ++k) accumulators_[k]->del_post_hook(hooks_[k]);
}

std::vector<std::vector<size_t>> GradientSync::buckets() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b->params);
  return out;
}

at::Tensor GradientSync::Slot(size_t k) const { return slots_[k]; }

void GradientSync::Prepare(bool sync) {
  syncing_ = sync;
  ++passes_;
  pass_scaled_ = false;
  fired_.assign(params_.size(), 0);
  next_launch_ = 0;
  for (auto& b : buckets_) {
    b->ready = 0;
  }
  // Each .grad is its slot in a bucket: backward accumulates straight into the bucket. A .grad
  // that is not (it was set to none, or replaced) moves in, keeping its value.
  for (size_t k = 0; k < params_.size(); ++k) {
    at::Tensor slot = Slot(k);
    at::Tensor& grad = params_[k].mutable_grad();
    if (grad.defined() && grad.data_ptr() == slot.data_ptr()) continue;
    if (grad.defined()) {
      slot.copy_(grad);
    } else {
      slot.zero_();
    }
    grad = slot;
  }
}

at::Tensor GradientSync::ScaleLoss(const at::Tensor& loss) {
  if (passes_ == 0 || pass_scaled_) throw InvalidError("GradientSync::ScaleLoss() must follow Prepare(), once a pass");
  pass_scaled_ = true;
  ++scaled_passes_;
  return loss / group_->size();
}

bool GradientSync::Predivided() const {
  if (scaled_passes_ == 0) return false;
  if (scaled_passes_ == passes_) return true;
  throw InvalidError("GradientSync: " + std::to_string(scaled_passes_) + " of the " + std::to_string(passes_) +
                     " backward passes accumulated since the last synchronisation had their loss scaled by "
                     "ScaleLoss(); scale every pass's loss or none");
}

// Called by autograd after the parameter's gradient of this pass was added to .grad.
void GradientSync::OnGradient(size_t k) {
  if (!syncing_ || fired_[k]) return;
  fired_[k] = 1;
  // Average: divide before the sum (so a compressed dtype does not overflow), here while the
  // gradient autograd just wrote is still in cache, rather than in a pass over the bucket; or
  // not at all when every loss was scaled.
  if (!Predivided()) Slot(k).div_(group_->size());
  Bucket& b = *buckets_[where_[k].first];
  if (++b.ready == b.params.size()) LaunchReady();
}

// Buckets go out in index order on every rank, so that the ranks' collectives pair up.
void GradientSync::LaunchReady() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_]->ready == buckets_[next_launch_]->params.size()) {
    Launch(*buckets_[next_launch_++]);
  }
}

void GradientSync::Launch(Bucket& b) {
  if (options_.compression == "fp16") {
    b.wire = b.flat.to(at::kHalf);
  } else if (options_.compression == "bf16") {
    b.wire = b.flat.to(at::kBFloat16);
  } else {
    b.wire = b.flat;
  }
  b.pending = group_->AllReduceAsync(b.wire, "gradient allreduce of bucket " + std::to_string(&b - buckets_[0].get()));
}

void GradientSync::Finish() {
  if (!syncing_) return;
  auto start = std::chrono::steady_clock::now();
  // Parameters without a gradient in this pass contribute what .grad holds (zero after zero_grad).
  for (size_t i = next_launch_; i < buckets_.size(); ++i) {
    for (size_t k : buckets_[i]->params) {
      if (!fired_[k] && !Predivided()) Slot(k).div_(group_->size());
    }
    Launch(*buckets_[i]);
  }
  next_launch_ = buckets_.size();
  for (auto& b : buckets_) {
    b->pending.Wait();
    if (b->wire.data_ptr() != b->flat.data_ptr()) b->flat.copy_(b->wire);
  }
  // A .grad replaced during backward (not accumulated in place) gets the average too.
  for (size_t k = 0; k < params_.size(); ++k) {
    at::Tensor slot = Slot(k);
    at::Tensor& grad = params_[k].mutable_grad();
    if (!grad.defined() || grad.data_ptr() != slot.data_ptr()) grad = slot;
  }
  syncing_ = false;
  passes_ = scaled_passes_ = 0;
  ++stats_.steps;
  stats_.finish_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

namespace {

std::string Describe(const std::string& name, const at::Tensor& t) {
  return name + " " + c10::str(t.sizes()) + " " + std::string(c10::toString(t.scalar_type()));
}

}  // namespace

void BroadcastBuffers(Group& group, const std::vector<at::Tensor>& buffers) {
  std::vector<at::Tensor> floats;
  for (const at::Tensor& b : buffers) {
    if (b.scalar_type() == at::kFloat && b.numel() > 0) floats.push_back(b);
  }
  if (floats.empty()) return;
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> flat_parts;
  for (const at::Tensor& b : floats) flat_parts.push_back(b.reshape({-1}));
  at::Tensor flat = at::cat(flat_parts);
  group.Broadcast(flat, 0, "broadcast of the buffers");
  int64_t offset = 0;
  for (const at::Tensor& b : floats) {
    at::Tensor target = b;
    target.copy_(flat.narrow(0, offset, b.numel()).view_as(b));
    offset += b.numel();
  }
}

void BroadcastModel(Group& group, torch::nn::Module& module, torch::optim::Optimizer* optimizer) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& p : module.named_parameters()) tensors.emplace_back(p.key(), p.value());
  for (const auto& b : module.named_buffers()) tensors.emplace_back(b.key(), b.value());
  std::string mine;
  for (const auto& [name, t] : tensors) mine += Describe(name, t) + "\n";
  std::vector<std::string> all = group.AllGather(mine, "comparing the ranks' models");
  for (int r = 1; r < group.size(); ++r) {
    if (all[r] == all[0]) continue;
    std::istringstream a(all[0]), b(all[r]);
    std::string la, lb;
    int line = 0;
    while (true) {
      bool ga = static_cast<bool>(std::getline(a, la)), gb = static_cast<bool>(std::getline(b, lb));
      ++line;
      if (!ga && !gb) break;
      if (ga && gb && la == lb) continue;
      throw InvalidError("rank " + std::to_string(r) + "'s model differs from rank 0's at tensor " + std::to_string(line) +
                         ": rank 0 has " + (ga ? "'" + la + "'" : "no more tensors") + ", rank " + std::to_string(r) +
                         " has " + (gb ? "'" + lb + "'" : "no more tensors") +
                         " (every rank must build the same model)");
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : tensors) {
    at::Tensor contiguous = t.is_contiguous() ? t : t.contiguous();
    group.Broadcast(contiguous, 0, "broadcast of " + name);
    if (!contiguous.is_same(t)) t.copy_(contiguous);
  }
  if (optimizer) {
    std::string bytes;
    if (group.rank() == 0) {
      torch::serialize::OutputArchive archive;
      optimizer->save(archive);
      std::ostringstream out;
      archive.save_to(out);
      bytes = out.str();
    }
    bytes = group.Share(bytes, 0, "broadcast of the optimizer state");
    if (group.rank() != 0) {
      torch::serialize::InputArchive archive;
      std::istringstream in(bytes);
      archive.load_from(in);
      optimizer->load(archive);
    }
  }
}

}  // namespace shoal::dist
