// The transform's cost alone: the table's images decoded whole before the clock starts, then
// Transformer::Apply (random resized crop to N, flip, gray to RGB, normalize) into a batch
// buffer of 256 images, 64-byte aligned as the loader's (--unaligned: 4 bytes off, so the
// streaming stores are not used). One thread. Prints one JSON line with the best of 5 passes in
// microseconds an image.
//   shoal_transform_bench TABLE [--crop N] [--images N] [--unaligned]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "data/image_codec.h"
#include "data/transform.h"
#include "delta/scan.h"
#include "delta/snapshot.h"
#include "util/error.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TABLE [--crop N] [--images N] [--unaligned]\n", argv[0]);
    return 2;
  }
  int crop = 224;
  size_t max_images = 2000;
  bool unaligned = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--unaligned") == 0) unaligned = true;
  }
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--crop") == 0) crop = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--images") == 0) max_images = static_cast<size_t>(std::atol(argv[++i]));
  }
  try {
    std::vector<shoal::data::Image> images;
    shoal::delta::ScanOptions scan;
    scan.columns = {"image"};
    shoal::delta::ScanSnapshot(shoal::delta::LoadSnapshot(argv[1]), scan, [&](const shoal::parquet::RecordBatch& b) {
      for (int64_t r = 0; r < b.num_rows && images.size() < max_images; ++r) {
        images.push_back(shoal::data::DecodeImage(b.columns[0].Bytes(r)));
      }
    });
    if (images.empty()) throw shoal::InvalidError("no images");
    shoal::data::TransformOptions o;
    o.channels = 3;
    o.random_resized_crop = crop;
    o.horizontal_flip = true;
    o.mean = {0.29f};
    o.std = {0.35f};
    shoal::data::Transformer t(o, {});
    const size_t per = t.output_floats(), batch = 256;
    std::unique_ptr<float, decltype(&std::free)> buffer(
        static_cast<float*>(std::aligned_alloc(64, (per * batch + 16) * sizeof(float))), &std::free);
    if (!buffer) throw shoal::IOError("out of memory");
    float* out = buffer.get() + (unaligned ? 1 : 0);
    double best = 1e30;
    for (int pass = 0; pass < 5; ++pass) {
      auto start = std::chrono::steady_clock::now();
      for (size_t i = 0; i < images.size(); ++i) t.Apply(images[i], i * 7919 + pass, out + (i % batch) * per);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::min(best, s / static_cast<double>(images.size()) * 1e6);
    }
    std::printf("{\"engine\":\"transform\",\"images\":%zu,\"crop\":%d,\"aligned\":%s,\"us_per_image\":%.1f}\n",
                images.size(), crop, unaligned ? "false" : "true", best);
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal_transform_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
