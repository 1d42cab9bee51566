// Per-sample image transforms of the loader: decoded 8-bit pixels in, one CHW float tensor's
// worth of values out. Random transforms draw from a generator seeded per sample, so a sample's
// result depends on (seed, epoch, row) and never on which thread ran it. No torch here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image_codec.h"

namespace shoal::data {

struct TransformOptions {
  int channels = 0;             ///< output channels: 1 or 3; 0 keeps the stored ones
  int resize = 0;               ///< shorter side to this many pixels (bilinear); 0: no resize
  int center_crop = 0;          ///< square crop of this side from the centre; 0: none
  int random_resized_crop = 0;  ///< output side of a random resized crop; 0: none
  double crop_scale_min = 0.08, crop_scale_max = 1.0;        ///< share of the area
  double crop_ratio_min = 3.0 / 4.0, crop_ratio_max = 4.0 / 3.0;  ///< aspect ratio w/h
  bool horizontal_flip = false;  ///< flip with probability 1/2
  bool normalize = true;         ///< (x/255 - mean) / std per channel; else x/255
  std::vector<float> mean;       ///< per channel (or one for all); empty: 0
  std::vector<float> std;        ///< per channel (or one for all); empty: 1
};

/// A small, fast, seedable generator (SplitMix64), so that random transforms and shuffles are
/// reproducible on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n); n > 0.
  uint64_t Below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64); }

 private:
  uint64_t state_;
};

/// A seed mixed from several values (for a per-epoch or per-sample generator).
uint64_t MixSeed(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0);

/// Applies TransformOptions to decoded images of one table.
class Transformer {
 public:
  /// `stored_shape` is (channels, height, width) from the table's description, or empty when
  /// images differ in size; the output shape must then be fixed by a crop or by resize with
  /// square images. Throws InvalidError for options that contradict each other.
  Transformer(TransformOptions options, std::vector<int> stored_shape);

  /// Output (channels, height, width); -1 entries are known only per image (no fixed shape).
  const std::vector<int>& output_shape() const { return output_shape_; }
  size_t output_floats() const;

  /// Writes the transformed image, CHW float, to `out` (output_floats() values). `seed` drives
  /// the random crop and flip. Throws InvalidError when the image's size does not give the
  /// fixed output shape.
  void Apply(const Image& image, uint64_t seed, float* out) const { Apply(image, nullptr, seed, out); }
  /// The same for a window of the image (see DecodeImageWindowInto): `window` gives its place
  /// in the whole image, which must hold Needed()'s rectangle; the result is the whole image's.
  void Apply(const Image& image, const ImageWindow* window, uint64_t seed, float* out) const;

  /// Whether Apply reads only part of an image (a crop), so decoding only that part pays.
  bool reads_part() const { return options_.center_crop > 0 || options_.random_resized_crop > 0; }
  /// The pixels Apply reads of a width x height image with this seed (in the image's channels).
  PixelRect Needed(int width, int height, uint64_t seed) const;

 private:
  struct Region {
    double x = 0, y = 0, width = 0, height = 0;  // source rectangle
    int out_width = 0, out_height = 0;
    bool flip = false;
  };
  Region Plan(int width, int height, uint64_t seed) const;

  TransformOptions options_;
  std::vector<int> output_shape_;
  std::vector<float> scale_, shift_;  // per output channel: value = pixel * scale + shift
};

/// Converts gray to RGB or RGB to gray (ITU-R 601 luma, as PIL's convert("L")).
Image ConvertChannels(const Image& image, int channels);

}  // namespace shoal::data
