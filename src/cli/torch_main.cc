// `shoal-torch`: the commands that need LibTorch, in their own executable so that `shoal` itself
// never loads it. `shoal` runs it; users need not.
//   shoal-torch devices   prints the number of CUDA devices LibTorch sees
#include <torch/cuda.h>

#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "devices") == 0) {
    std::cout << torch::cuda::device_count() << "\n";
    return 0;
  }
  std::cerr << "usage: shoal-torch devices (run through 'shoal'; see 'shoal --help')\n";
  return 2;
}
