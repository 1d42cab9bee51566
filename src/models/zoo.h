// The model zoo: networks built by name from a few options, as `shoal train` configs name them.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <memory>
#include <string>
#include <vector>

namespace shoal::models {

struct ModelOptions {
  std::string name = "simple_cnn";  ///< simple_cnn, mlp, resnet18, resnet34, mobilenet_v2
  int in_channels = 1;
  int image_size = 28;              ///< height = width of the input
  int num_classes = 10;
  std::vector<int> hidden = {};     ///< mlp: hidden layer widths (default 256, 128)
  double dropout = 0.25;
  std::string stem = "imagenet";    ///< resnet: imagenet (7x7/2 conv and max pool) or cifar (3x3/1 conv)
  double width_mult = 1.0;          ///< mobilenet_v2: channel width multiplier
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

/// ResNet-18/34 (BasicBlock) with torchvision's parameter names: conv1, bn1, layer1..layer4
/// (blocks with conv1, bn1, conv2, bn2, downsample.0/.1), fc. The CIFAR stem is a 3x3 stride-1
/// conv1 without the max pool.
class ResNet : public Network {
 public:
  ResNet(const ModelOptions& options, const std::vector<int>& blocks);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  std::vector<torch::nn::Sequential> layers_;
  torch::nn::Linear fc_{nullptr};
  bool max_pool_ = true;
};

/// MobileNetV2 with torchvision's structure and names (features.N..., classifier.1) and its
/// width multiplier rule (channels rounded to multiples of 8).
class MobileNetV2 : public Network {
 public:
  explicit MobileNetV2(const ModelOptions& options);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  torch::nn::Sequential features_{nullptr}, classifier_{nullptr};
};

/// The network `options.name` names. Throws InvalidError for an unknown name, listing the known.
std::shared_ptr<Network> CreateModel(const ModelOptions& options);

}  // namespace shoal::models
