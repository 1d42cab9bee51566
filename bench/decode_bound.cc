// The decode bound of a table of images: every image's bytes held in memory, then `threads`
// threads decode them (PNG through libpng, JPEG through libjpeg-turbo, as the loader does) in a
// tight loop, nothing else. Prints one JSON line with samples_per_s.
//   shoal_decode_bound TABLE [--threads N] [--seconds S] [--channels C]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "data/image_codec.h"
#include "delta/scan.h"
#include "delta/snapshot.h"
#include "util/error.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TABLE [--threads N] [--seconds S] [--channels C]\n", argv[0]);
    return 2;
  }
  int threads = 2, channels = 0;
  double min_seconds = 3;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--seconds") == 0) min_seconds = std::atof(argv[++i]);
    else if (std::strcmp(argv[i], "--channels") == 0) channels = std::atoi(argv[++i]);
  }
  try {
    std::vector<std::string> images;
    shoal::delta::ScanOptions scan;
    scan.columns = {"image"};
    shoal::delta::ScanSnapshot(shoal::delta::LoadSnapshot(argv[1]), scan, [&](const shoal::parquet::RecordBatch& b) {
      for (int64_t r = 0; r < b.num_rows; ++r) images.emplace_back(b.columns[0].Bytes(r));
    });
    if (images.empty()) throw shoal::InvalidError("no images");
    // Whole passes over the images, each thread taking every threads-th image, until the time is up.
    int64_t passes = 0;
    auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    do {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          shoal::data::Image image;
          for (size_t i = t; i < images.size(); i += threads) shoal::data::DecodeImageInto(images[i], channels, &image);
        });
      }
      for (auto& th : pool) th.join();
      ++passes;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < min_seconds);
    double samples = static_cast<double>(passes) * images.size();
    std::printf("{\"engine\":\"decode bound\",\"threads\":%d,\"samples\":%.0f,\"seconds\":%.6f,\"samples_per_s\":%.1f}\n",
                threads, samples, seconds, samples / seconds);
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal_decode_bound: %s\n", e.what());
    return 1;
  }
  return 0;
}
