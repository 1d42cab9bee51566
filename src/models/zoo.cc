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

// ---- ResNet ----

namespace {

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t groups = 1) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding((kernel - 1) / 2).groups(groups).bias(false));
}

// torchvision's BasicBlock.
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in, int64_t planes, int64_t stride) {
    conv1_ = register_module("conv1", Conv(in, planes, 3, stride));
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(planes));
    conv2_ = register_module("conv2", Conv(planes, planes, 3, 1));
    bn2_ = register_module("bn2", torch::nn::BatchNorm2d(planes));
    if (stride != 1 || in != planes) {
      downsample_ = register_module("downsample", torch::nn::Sequential(Conv(in, planes, 1, stride), torch::nn::BatchNorm2d(planes)));
    }
  }
  at::Tensor forward(at::Tensor x) {
    at::Tensor out = torch::relu(bn1_(conv1_(x)));
    out = bn2_(conv2_(out));
    return torch::relu(out + (downsample_ ? downsample_->forward(x) : x));
  }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

// torchvision's _make_divisible: v rounded to a multiple of 8, never more than 10% down.
int64_t MakeDivisible(double v, int64_t divisor = 8) {
  int64_t rounded = std::max<int64_t>(divisor, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (rounded < 0.9 * v) rounded += divisor;
  return rounded;
}

// A Sequential with a plain forward, so that it can sit inside another Sequential.
class SeqImpl : public torch::nn::SequentialImpl {
 public:
  using SequentialImpl::SequentialImpl;
  at::Tensor forward(at::Tensor x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(Seq);

// Conv2dNormActivation: conv, batch norm, ReLU6 (children 0, 1, 2).
Seq ConvBnRelu6(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t groups = 1) {
  return Seq(Conv(in, out, kernel, stride, groups), torch::nn::BatchNorm2d(out), torch::nn::ReLU6());
}

// torchvision's InvertedResidual: an optional 1x1 expansion, a 3x3 depthwise conv, a 1x1 linear
// projection ("conv"), with the input added back when the shape allows.
class InvertedResidualImpl : public torch::nn::Module {
 public:
  InvertedResidualImpl(int64_t in, int64_t out, int64_t stride, int64_t expand) : residual_(stride == 1 && in == out) {
    const int64_t hidden = static_cast<int64_t>(std::lround(static_cast<double>(in) * static_cast<double>(expand)));
    Seq conv;
    if (expand != 1) conv->push_back(ConvBnRelu6(in, hidden, 1, 1));
    conv->push_back(ConvBnRelu6(hidden, hidden, 3, stride, hidden));
    conv->push_back(Conv(hidden, out, 1, 1));
    conv->push_back(torch::nn::BatchNorm2d(out));
    conv_ = register_module("conv", conv);
  }
  at::Tensor forward(at::Tensor x) { return residual_ ? x + conv_->forward(x) : conv_->forward(x); }

 private:
  Seq conv_{nullptr};
  bool residual_;
};
TORCH_MODULE(InvertedResidual);

}  // namespace

ResNet::ResNet(const ModelOptions& o, const std::vector<int>& blocks) {
  if (o.stem != "imagenet" && o.stem != "cifar") throw InvalidError("resnet stem must be imagenet or cifar, not '" + o.stem + "'");
  max_pool_ = o.stem == "imagenet";
  conv1_ = register_module("conv1", max_pool_ ? torch::nn::Conv2d(torch::nn::Conv2dOptions(o.in_channels, 64, 7).stride(2).padding(3).bias(false))
                                              : Conv(o.in_channels, 64, 3, 1));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
  int64_t in = 64;
  const int64_t planes[] = {64, 128, 256, 512};
  for (size_t l = 0; l < 4; ++l) {
    torch::nn::Sequential layer;
    for (int b = 0; b < blocks[l]; ++b) {
      layer->push_back(BasicBlock(in, planes[l], b == 0 && l > 0 ? 2 : 1));
      in = planes[l];
    }
    layers_.push_back(register_module("layer" + std::to_string(l + 1), layer));
  }
  fc_ = register_module("fc", torch::nn::Linear(512, o.num_classes));
}

at::Tensor ResNet::forward(const at::Tensor& input) {
  at::Tensor x = torch::relu(bn1_(conv1_(input)));
  if (max_pool_) x = torch::max_pool2d(x, 3, 2, 1);
  for (auto& layer : layers_) x = layer->forward(x);
  return fc_(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
}

MobileNetV2::MobileNetV2(const ModelOptions& o) {
  if (!(o.width_mult > 0)) throw InvalidError("mobilenet_v2 width_mult must be positive");
  int64_t in = MakeDivisible(32 * o.width_mult);
  const int64_t last = MakeDivisible(1280 * std::max(1.0, o.width_mult));
  // (expansion, channels, repeats, stride) of each stage.
  const int64_t settings[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  torch::nn::Sequential features;
  features->push_back(ConvBnRelu6(o.in_channels, in, 3, 2));
  for (const auto& s : settings) {
    const int64_t out = MakeDivisible(static_cast<double>(s[1]) * o.width_mult);
    for (int64_t i = 0; i < s[2]; ++i) {
      features->push_back(InvertedResidual(in, out, i == 0 ? s[3] : 1, s[0]));
      in = out;
    }
  }
  features->push_back(ConvBnRelu6(in, last, 1, 1));
  features_ = register_module("features", features);
  classifier_ = register_module("classifier", torch::nn::Sequential(torch::nn::Dropout(0.2), torch::nn::Linear(last, o.num_classes)));
}

at::Tensor MobileNetV2::forward(const at::Tensor& input) {
  return classifier_->forward(torch::adaptive_avg_pool2d(features_->forward(input), {1, 1}).flatten(1));
}

std::shared_ptr<Network> CreateModel(const ModelOptions& options) {
  if (options.in_channels <= 0 || options.num_classes <= 0 || options.image_size <= 0) {
    throw InvalidError("model options need positive in_channels, image_size and num_classes");
  }
  if (options.name == "simple_cnn") return std::make_shared<SimpleCnn>(options);
  if (options.name == "mlp") return std::make_shared<Mlp>(options);
  if (options.name == "resnet18") return std::make_shared<ResNet>(options, std::vector<int>{2, 2, 2, 2});
  if (options.name == "resnet34") return std::make_shared<ResNet>(options, std::vector<int>{3, 4, 6, 3});
  if (options.name == "mobilenet_v2") return std::make_shared<MobileNetV2>(options);
  throw InvalidError("unknown model '" + options.name + "' (known: simple_cnn, mlp, resnet18, resnet34, mobilenet_v2)");
}

}  // namespace shoal::models
