#include "cli/app.h"
#include "util/memory.h"

int main(int argc, char** argv) {
  shoal::TuneAllocatorForBatches();
  return shoal::cli::Run(argc, argv);
}
