// The zoo's ResNet and MobileNetV2 against torchvision (Debian's python3-torchvision): the same
// state dict loads into torchvision's model with strict names and shapes, and the same input gives
// the same output.
#include "models/zoo.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "util/error.h"
#include "util/file.h"

namespace shoal::models {
namespace {

namespace fs = std::filesystem;

struct Case {
  ModelOptions options;
  std::string python;  // builds `m`, the torchvision model
};

class TorchvisionTest : public ::testing::TestWithParam<Case> {};

TEST_P(TorchvisionTest, SameStateDictSameOutput) {
  const Case& c = GetParam();
  torch::manual_seed(3);
  std::shared_ptr<Network> net = CreateModel(c.options);
  // A few training-mode passes move the batch-norm statistics off their initial values, so a
  // mix-up of buffers would show.
  net->train();
  for (int i = 0; i < 2; ++i) net->forward(torch::randn({4, 3, 64, 64}));
  net->eval();
  torch::NoGradGuard no_grad;
  at::Tensor input = torch::rand({2, 3, 64, 64});
  at::Tensor output = net->forward(input);
  c10::Dict<std::string, at::Tensor> state;
  for (const auto& p : net->named_parameters()) state.insert(p.key(), p.value());
  for (const auto& b : net->named_buffers()) state.insert(b.key(), b.value());
  c10::impl::GenericDict saved(c10::StringType::get(), c10::AnyType::get());
  saved.insert("state_dict", state);
  saved.insert("input", input);
  saved.insert("output", output);
  fs::path dir = fs::temp_directory_path() / ("shoal_zoo_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<char> bytes = torch::pickle_save(c10::IValue(saved));
  WriteFileAtomically((dir / "model.pt").string(), std::string_view(bytes.data(), bytes.size()));
  std::ofstream(dir / "check.py") << "import sys, torch, torchvision\n"
                                     "torch.set_num_threads(1)\n"
                                     "s = torch.load(sys.argv[1])\n"
                                  << c.python
                                  << "m.load_state_dict(s['state_dict'], strict=True)\n"
                                     "m.eval()\n"
                                     "with torch.no_grad():\n"
                                     "    out = m(s['input'])\n"
                                     "d = (out - s['output']).abs().max().item()\n"
                                     "print('max difference', d)\n"
                                     "sys.exit(0 if d < 1e-4 else 1)\n";
  std::string log = (dir / "check.log").string();
  int status = std::system(("/usr/bin/python3 " + (dir / "check.py").string() + " " + (dir / "model.pt").string() + " > " +
                            log + " 2>&1")
                               .c_str());
  std::vector<uint8_t> printed = ReadFile(log);
  fs::remove_all(dir);
  EXPECT_EQ(status, 0) << std::string(printed.begin(), printed.end());
}

ModelOptions Options(const std::string& name, double width = 1.0, const std::string& stem = "imagenet") {
  ModelOptions o;
  o.name = name;
  o.in_channels = 3;
  o.image_size = 64;
  o.num_classes = 10;
  o.width_mult = width;
  o.stem = stem;
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, TorchvisionTest,
    ::testing::Values(Case{Options("resnet18"), "m = torchvision.models.resnet18(num_classes=10)\n"},
                      Case{Options("resnet34"), "m = torchvision.models.resnet34(num_classes=10)\n"},
                      Case{Options("resnet18", 1.0, "cifar"),
                           "m = torchvision.models.resnet18(num_classes=10)\n"
                           "m.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)\n"
                           "m.maxpool = torch.nn.Identity()\n"},
                      Case{Options("mobilenet_v2"), "m = torchvision.models.mobilenet_v2(num_classes=10)\n"},
                      Case{Options("mobilenet_v2", 0.5), "m = torchvision.models.mobilenet_v2(num_classes=10, width_mult=0.5)\n"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const ModelOptions& o = info.param.options;
      std::string name = o.name + "_" + o.stem + "_w" + std::to_string(static_cast<int>(o.width_mult * 100));
      return name;
    });

TEST(ZooTest, UnknownModelsAndBadOptionsAreErrors) {
  EXPECT_THROW(CreateModel(Options("vgg16")), Error);
  EXPECT_THROW(CreateModel(Options("resnet18", 1.0, "tiny")), Error);
  EXPECT_THROW(CreateModel(Options("mobilenet_v2", 0.0)), Error);
}

}  // namespace
}  // namespace shoal::models
