// Loader batches as LibTorch tensors, without copying the images.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "data/loader.h"

namespace shoal::train {

struct TensorBatch {
  at::Tensor images;  ///< float [N, C, H, W]: the batch's own buffer
  at::Tensor labels;  ///< int64 [N]; undefined when the table has no label column
  at::Tensor ids;     ///< int64 [N]
  int64_t epoch = 0;
  int64_t index = 0;
};

/// Hands a batch to LibTorch. The images tensor points at the batch's buffer, which goes back
/// to the loader's pool once the last tensor using it is freed.
TensorBatch ToTensors(data::Batch&& batch);

}  // namespace shoal::train
