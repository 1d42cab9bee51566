// The decode bound of a table of images: every image's bytes held in memory, then `threads`
// threads decode them (PNG through libpng, JPEG through libjpeg-turbo, as the loader does) in a
// tight loop, nothing else. Prints one JSON line with samples_per_s.
//   shoal_decode_bound TABLE [--threads N] [--seconds S] [--channels C] [--crop-window N]
// --crop-window N decodes, as the loader does under a random resized crop to N x N, only the
// window of each JPEG that its crop reads (a fresh crop every pass; from the second pass on, as
// in the loader's later epochs, only down to the crop's last row), to show the loader's own
// decoding cost; without it, whole images are decoded (the decode bound).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "data/image_codec.h"
#include "data/transform.h"
#include "delta/scan.h"
#include "delta/snapshot.h"
#include "util/error.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TABLE [--threads N] [--seconds S] [--channels C] [--crop-window N]\n", argv[0]);
    return 2;
  }
  int threads = 2, channels = 0, crop_window = 0;
  double min_seconds = 3;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--seconds") == 0) min_seconds = std::atof(argv[++i]);
    else if (std::strcmp(argv[i], "--channels") == 0) channels = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--crop-window") == 0) crop_window = std::atoi(argv[++i]);
  }
  try {
    std::vector<std::string> images;
    shoal::delta::ScanOptions scan;
    scan.columns = {"image"};
    shoal::delta::ScanSnapshot(shoal::delta::LoadSnapshot(argv[1]), scan, [&](const shoal::parquet::RecordBatch& b) {
      for (int64_t r = 0; r < b.num_rows; ++r) images.emplace_back(b.columns[0].Bytes(r));
    });
    if (images.empty()) throw shoal::InvalidError("no images");
    std::unique_ptr<shoal::data::Transformer> crop;
    if (crop_window > 0) {
      shoal::data::TransformOptions o;
      o.random_resized_crop = crop_window;
      crop = std::make_unique<shoal::data::Transformer>(o, std::vector<int>{});
    }
    // As the loader remembers: an image that once decoded whole is later decoded only to its
    // crop's last row (each thread has its own images, and passes are joined).
    std::vector<uint8_t> known_good(images.size(), 0);
    // Whole passes over the images, each thread taking every threads-th image, until the time is up.
    int64_t passes = 0;
    auto start = std::chrono::steady_clock::now();
    double seconds = 0;
    do {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          shoal::data::Image image;
          if (crop) {
            shoal::data::ImageWindow window;
            for (size_t i = t; i < images.size(); i += threads) {
              const uint64_t seed = shoal::data::MixSeed(static_cast<uint64_t>(passes), i);
              const bool whole = shoal::data::DecodeImageWindowInto(
                  images[i], channels, [&](int w, int h) { return crop->Needed(w, h, seed); }, &image, &window,
                  known_good[i] != 0);
              if (whole) known_good[i] = 1;
            }
          } else {
            for (size_t i = t; i < images.size(); i += threads) shoal::data::DecodeImageInto(images[i], channels, &image);
          }
        });
      }
      for (auto& th : pool) th.join();
      ++passes;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < min_seconds);
    double samples = static_cast<double>(passes) * images.size();
    std::printf("{\"engine\":\"%s\",\"threads\":%d,\"samples\":%.0f,\"seconds\":%.6f,\"samples_per_s\":%.1f}\n",
                crop ? "decode bound, crop windows" : "decode bound", threads, samples, seconds, samples / seconds);
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal_decode_bound: %s\n", e.what());
    return 1;
  }
  return 0;
}
