// A Module around a network from the zoo: the network's layers are the module's own children, so
// parameter names carry no prefix (conv1.weight, not net.conv1.weight), as torchvision's do.
#pragma once

#include <memory>

#include "models/zoo.h"
#include "train/trainer.h"

namespace shoal::train {

class NetworkModule : public Module {
 public:
  explicit NetworkModule(std::shared_ptr<models::Network> net) : net_(std::move(net)) {
    for (const auto& child : net_->named_children()) register_module(child.key(), child.value());
  }
  at::Tensor forward(const at::Tensor& x) override { return net_->forward(x); }
  void train(bool on = true) override {
    Module::train(on);
    net_->train(on);
  }

 protected:
  std::shared_ptr<models::Network> net_;
};

}  // namespace shoal::train
