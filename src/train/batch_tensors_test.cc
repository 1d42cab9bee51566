#include "train/batch_tensors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace shoal::train {
namespace {

TEST(BatchTensorsTest, ImagesShareTheBatchBufferWhichReturnsToThePool) {
  auto pool = std::make_shared<data::BufferPool>(4);
  data::Batch batch;
  batch.size = 2;
  batch.shape = {2, 1, 1, 3};
  batch.images = data::FloatBuffer(pool, 6);
  for (int i = 0; i < 6; ++i) batch.images[i] = static_cast<float>(i) / 2;
  batch.labels = {3, 7};
  batch.ids = {10, 11};
  const float* buffer = batch.images.data();
  {
    TensorBatch t = ToTensors(std::move(batch));
    EXPECT_EQ(t.images.data_ptr<float>(), buffer);  // no copy
    EXPECT_EQ(t.images.sizes(), (std::vector<int64_t>{2, 1, 1, 3}));
    EXPECT_FLOAT_EQ(t.images[1][0][0][2].item<float>(), 2.5f);
    EXPECT_EQ(t.labels.dtype(), torch::kInt64);
    EXPECT_EQ(t.labels[1].item<int64_t>(), 7);
    EXPECT_EQ(t.ids[0].item<int64_t>(), 10);
    EXPECT_DOUBLE_EQ(t.images.sum().item<double>(), 7.5);
  }
  // The tensors are gone: the next batch of that size gets the same storage.
  size_t capacity = 0;
  data::AlignedFloats again = pool->Take(6, &capacity);
  EXPECT_EQ(again.get(), buffer);
  pool->Give(std::move(again), capacity);
}

}  // namespace
}  // namespace shoal::train
