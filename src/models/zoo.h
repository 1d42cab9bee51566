// The model zoo: networks built by name from a few options, as `shoal train` configs name them.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <memory>
#include <string>
#include <vector>

namespace shoal::models {

struct ModelOptions {
  std::string name = "simple_cnn";  ///< simple_cnn or mlp
  int in_channels = 1;
  int image_size = 28;              ///< height = width of the input
  int num_classes = 10;
  std::vector<int> hidden = {};     ///< mlp: hidden layer widths (default 256, 128)
  double dropout = 0.25;
};

/// A network mapping float images [N, C, H, W] to logits [N, num_classes].
class Network : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& x) = 0;
};

/// SimpleCNN, the Fashion-MNIST baseline: two blocks of 3x3 convolution, batch norm, ReLU and 2x2
/// max pooling (32 and 64 channels), then a 128-unit layer with dropout and the classifier.
/// Parameters: conv1, bn1, conv2, bn2, fc1, fc2.
class SimpleCnn : public Network {
 public:
  explicit SimpleCnn(const ModelOptions& options);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};

/// A multi-layer perceptron on the flattened image: layers.0, layers.1, ... (Linear), ReLU between.
class Mlp : public Network {
 public:
  explicit Mlp(const ModelOptions& options);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  std::vector<torch::nn::Linear> layers_;
  double dropout_;
};

/// The network `options.name` names. Throws InvalidError for an unknown name, listing the known.
std::shared_ptr<Network> CreateModel(const ModelOptions& options);

}  // namespace shoal::models
