#include "models/zoo.h"

#include <torch/torch.h>

#include "util/error.h"

namespace shoal::models {

SimpleCnn::SimpleCnn(const ModelOptions& o) {
  if (o.image_size % 4 != 0 || o.image_size < 4) {
    throw InvalidError("simple_cnn needs an image size divisible by 4, not " + std::to_string(o.image_size));
  }
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(o.in_channels, 32, 3).padding(1)));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(32));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)));
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(64));
  const int side = o.image_size / 4;
  fc1_ = register_module("fc1", torch::nn::Linear(64 * side * side, 128));
  fc2_ = register_module("fc2", torch::nn::Linear(128, o.num_classes));
  dropout_ = register_module("dropout", torch::nn::Dropout(o.dropout));
}

at::Tensor SimpleCnn::forward(const at::Tensor& input) {
  // Pooling before batch norm and ReLU (max pooling commutes with ReLU) does their work on a
  // quarter of the values.
  auto x = torch::relu(bn1_(torch::max_pool2d(conv1_(input), 2)));
  x = torch::relu(bn2_(torch::max_pool2d(conv2_(x), 2)));
  // fc1 and fc2 hold nn.Linear's parameters, but run as convolutions over the whole feature map:
  // the same arithmetic, through oneDNN rather than the generic BLAS of Debian's LibTorch (2x
  // faster on the CPU). The state dict stays that of nn.Linear.
  const int64_t side = x.size(2);
  x = torch::conv2d(x, fc1_->weight.view({fc1_->weight.size(0), x.size(1), side, x.size(3)}), fc1_->bias);
  x = dropout_(torch::relu(x));
  x = torch::conv2d(x, fc2_->weight.view({fc2_->weight.size(0), fc2_->weight.size(1), 1, 1}), fc2_->bias);
  return x.flatten(1);
}

Mlp::Mlp(const ModelOptions& o) : dropout_(o.dropout) {
  std::vector<int> widths = o.hidden.empty() ? std::vector<int>{256, 128} : o.hidden;
  int64_t in = static_cast<int64_t>(o.in_channels) * o.image_size * o.image_size;
  widths.push_back(o.num_classes);
  torch::nn::ModuleList list;
  for (size_t i = 0; i < widths.size(); ++i) {
    layers_.push_back(torch::nn::Linear(in, widths[i]));
    list->push_back(layers_.back());
    in = widths[i];
  }
  register_module("layers", list);
}

at::Tensor Mlp::forward(const at::Tensor& input) {
  auto x = input.flatten(1);
  for (size_t i = 0; i < layers_.size(); ++i) {
    x = layers_[i](x);
    if (i + 1 < layers_.size()) x = torch::dropout(torch::relu(x), dropout_, is_training());
  }
  return x;
}

std::shared_ptr<Network> CreateModel(const ModelOptions& options) {
  if (options.in_channels <= 0 || options.num_classes <= 0 || options.image_size <= 0) {
    throw InvalidError("model options need positive in_channels, image_size and num_classes");
  }
  if (options.name == "simple_cnn") return std::make_shared<SimpleCnn>(options);
  if (options.name == "mlp") return std::make_shared<Mlp>(options);
  throw InvalidError("unknown model '" + options.name + "' (known: simple_cnn, mlp)");
}

}  // namespace shoal::models
