#include "cli/app.h"

int main(int argc, char** argv) { return shoal::cli::Run(argc, argv); }
