#include "train/batch_tensors.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace shoal::train {

namespace {

at::Tensor Int64s(std::vector<int64_t>&& values) {
  auto* owned = new std::vector<int64_t>(std::move(values));
  return torch::from_blob(
      owned->data(), {static_cast<int64_t>(owned->size())}, [owned](void*) { delete owned; },
      torch::TensorOptions().dtype(torch::kInt64));
}

}  // namespace

TensorBatch ToTensors(data::Batch&& batch) {
  TensorBatch out;
  out.epoch = batch.epoch;
  out.index = batch.index;
  auto* images = new data::FloatBuffer(std::move(batch.images));
  out.images = torch::from_blob(
      images->data(), batch.shape, [images](void*) { delete images; }, torch::TensorOptions().dtype(torch::kFloat32));
  if (!batch.labels.empty()) out.labels = Int64s(std::move(batch.labels));
  out.ids = Int64s(std::move(batch.ids));
  return out;
}

}  // namespace shoal::train
