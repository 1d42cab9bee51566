#include "data/transform.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SHOAL_X86_SIMD 1
// GCC would fuse the intrinsics' multiplies and adds where the target has FMA; clang does not.
#if defined(__clang__)
#define SHOAL_UNFUSED
#else
#define SHOAL_UNFUSED optimize("fp-contract=off")
#endif
#endif

#include "util/cpu.h"
#include "util/error.h"

namespace shoal::data {

uint64_t MixSeed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  SplitMix64 mix(a);
  uint64_t h = mix.Next();
  for (uint64_t v : {b, c, d}) {
    SplitMix64 next(h ^ (v + 0x632be59bd9b4e019ULL));
    h = next.Next();
  }
  return h;
}

Image ConvertChannels(const Image& image, int channels) {
  if (image.channels == channels) return image;
  Image out;
  out.width = image.width;
  out.height = image.height;
  out.channels = channels;
  size_t pixels = static_cast<size_t>(image.width) * image.height;
  out.pixels.resize(pixels * channels);
  if (image.channels == 1 && channels == 3) {
    for (size_t i = 0; i < pixels; ++i) out.pixels[3 * i] = out.pixels[3 * i + 1] = out.pixels[3 * i + 2] = image.pixels[i];
  } else if (image.channels == 3 && channels == 1) {
    for (size_t i = 0; i < pixels; ++i) {
      const uint8_t* p = &image.pixels[3 * i];
      out.pixels[i] = static_cast<uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
    }
  } else {
    throw InvalidError("cannot convert an image of " + std::to_string(image.channels) + " channels to " +
                       std::to_string(channels));
  }
  return out;
}

namespace {

std::vector<float> PerChannel(const std::vector<float>& values, int channels, float fallback, const char* what) {
  if (values.empty()) return std::vector<float>(channels, fallback);
  if (values.size() == 1) return std::vector<float>(channels, values[0]);
  if (static_cast<int>(values.size()) != channels) {
    throw InvalidError(std::string(what) + " has " + std::to_string(values.size()) + " values for " +
                       std::to_string(channels) + " channels");
  }
  return values;
}

// torchvision's Resize(side): the shorter side becomes `side`, the longer keeps the ratio.
std::pair<int, int> ResizedSize(int width, int height, int side) {
  if (width <= height) return {side, static_cast<int>(static_cast<int64_t>(side) * height / width)};
  return {static_cast<int>(static_cast<int64_t>(side) * width / height), side};
}

// Bilinear sampling positions along one axis: for each output index, the two source indices and
// the weight of the second, for a source span [start, start + length) drawn onto `out` pixels.
struct Axis {
  std::vector<int> lo, hi;
  std::vector<float> weight;
  Axis(double start, double length, int out, int source_size) : lo(out), hi(out), weight(out) {
    double step = length / out;
    for (int i = 0; i < out; ++i) {
      double f = std::clamp(start + (i + 0.5) * step - 0.5, 0.0, source_size - 1.0);
      lo[i] = static_cast<int>(f);
      hi[i] = std::min(lo[i] + 1, source_size - 1);
      weight[i] = static_cast<float>(f - lo[i]);
    }
  }
  // Source indices relative to a window that starts at `origin`.
  void Shift(int origin) {
    for (int& v : lo) v -= origin;
    for (int& v : hi) v -= origin;
  }
};

// The loops of the separable bilinear resample, compiled for AVX2 too (8 floats at a time, and
// gathers for the horizontal pass).
SHOAL_CPU_CLONES void ToFloats(const uint8_t* __restrict row, float* __restrict out, int n) {
  for (int x = 0; x < n; ++x) out[x] = row[x];
}

// `row` as floats, so the loop vectorizes with float gathers.
SHOAL_CPU_CLONES void HorizontalGray(const float* __restrict row, const int* __restrict lo, const int* __restrict hi,
                                     const float* __restrict weight, float* __restrict d, int n) {
  for (int x = 0; x < n; ++x) {
    const float a = row[lo[x]], b = row[hi[x]];
    d[x] = a + (b - a) * weight[x];
  }
}

#ifdef SHOAL_X86_SIMD
// HorizontalGray straight from the bytes when the image is scaled up: the 8 outputs of a chunk
// then read source pixels within 8 of each other, so two 8-byte loads at the chunk's lowest
// source index (`base`) and one after it hold every output's two neighbours, picked by a
// permute (`delta`: lo - base, 0..7) instead of gathers. Reads up to 8 bytes past the row's last
// pixel, so the caller keeps the last row of an image for the plain loop.
__attribute__((target("avx2"))) void HorizontalGrayUpAvx2(const uint8_t* row, const int* base, const int* delta,
                                                              const int* lo, const float* weight, float* d, int n) {
  int x = 0;
  for (int k = 0; x + 8 <= n; x += 8, ++k) {
    const uint8_t* p = row + base[k];
    __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    __m256 b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 1))));
    const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(delta + x));
    a = _mm256_permutevar8x32_ps(a, index);
    b = _mm256_permutevar8x32_ps(b, index);
    // a + (b - a) * w, unfused, rounded as the plain loop rounds it (a window's rows must
    // give the whole image's values, whichever loop ran them).
    _mm256_storeu_ps(d + x, _mm256_add_ps(a, _mm256_mul_ps(_mm256_sub_ps(b, a), _mm256_loadu_ps(weight + x))));
  }
  for (; x < n; ++x) {
    const float a = row[lo[x]], b = row[lo[x] + 1];
    d[x] = a + (b - a) * weight[x];
  }
}

// Blend with streaming stores, for rows of whole cache lines at line-aligned addresses: a batch
// of 224x224 RGB floats (154 MB at batch 256) is far larger than the cache, and ordinary stores
// first read every line they write (here 88 against 54 us an image). The same arithmetic as
// Blend, unfused, so that both give the same bits.
__attribute__((target("avx512f"), SHOAL_UNFUSED)) void BlendStreamAvx512(
    const float* __restrict top, const float* __restrict bottom, float wy, float scale, float shift, float* __restrict d,
    int n) {
  const __m512 vw = _mm512_set1_ps(wy), vs = _mm512_set1_ps(scale), vb = _mm512_set1_ps(shift);
  for (int x = 0; x < n; x += 16) {
    const __m512 t = _mm512_loadu_ps(top + x), b = _mm512_loadu_ps(bottom + x);
    const __m512 v = _mm512_add_ps(t, _mm512_mul_ps(_mm512_sub_ps(b, t), vw));
    _mm512_stream_ps(d + x, _mm512_add_ps(_mm512_mul_ps(v, vs), vb));
  }
}

const bool kAvx2 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}();
const bool kAvx512 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}();
#endif

SHOAL_CPU_CLONES void HorizontalRgb(const uint8_t* row, const int* lo, const int* hi, const float* weight, float* d0,
                                    float* d1, float* d2, int n) {
  for (int x = 0; x < n; ++x) {
    const uint8_t* a = row + lo[x] * 3;
    const uint8_t* b = row + hi[x] * 3;
    const float w = weight[x];
    d0[x] = a[0] + (static_cast<float>(b[0]) - a[0]) * w;
    d1[x] = a[1] + (static_cast<float>(b[1]) - a[1]) * w;
    d2[x] = a[2] + (static_cast<float>(b[2]) - a[2]) * w;
  }
}

SHOAL_CPU_CLONES void Blend(const float* __restrict top, const float* __restrict bottom, float wy, float scale,
                            float shift, float* __restrict d, int n) {
  for (int x = 0; x < n; ++x) d[x] = (top[x] + (bottom[x] - top[x]) * wy) * scale + shift;
}

}  // namespace

Transformer::Transformer(TransformOptions options, std::vector<int> stored_shape) : options_(std::move(options)) {
  for (int side : {options_.resize, options_.center_crop, options_.random_resized_crop}) {
    if (side < 0 || side > 16384) throw InvalidError("transform size " + std::to_string(side) + " is out of range");
  }
  if (options_.channels != 0 && options_.channels != 1 && options_.channels != 3) {
    throw InvalidError("channels must be 1 or 3, not " + std::to_string(options_.channels));
  }
  if (!(options_.crop_scale_min > 0 && options_.crop_scale_min <= options_.crop_scale_max && options_.crop_scale_max <= 1) ||
      !(options_.crop_ratio_min > 0 && options_.crop_ratio_min <= options_.crop_ratio_max)) {
    throw InvalidError("random resized crop needs 0 < scale_min <= scale_max <= 1 and 0 < ratio_min <= ratio_max");
  }
  int channels = options_.channels;
  int height = -1, width = -1;
  if (stored_shape.size() == 3) {
    if (channels == 0) channels = stored_shape[0];
    height = stored_shape[1];
    width = stored_shape[2];
  }
  if (channels == 0) channels = 3;  // unknown stored channels: decoders give gray or RGB; ask for RGB
  if (options_.resize > 0) {
    if (height > 0 && width > 0) {
      std::tie(width, height) = ResizedSize(width, height, options_.resize);
    } else {
      height = width = -1;
    }
  }
  if (options_.center_crop > 0) height = width = options_.center_crop;
  if (options_.random_resized_crop > 0) height = width = options_.random_resized_crop;
  output_shape_ = {channels, height, width};
  std::vector<float> mean = PerChannel(options_.normalize ? options_.mean : std::vector<float>{}, channels, 0.0f, "mean");
  std::vector<float> stdev = PerChannel(options_.normalize ? options_.std : std::vector<float>{}, channels, 1.0f, "std");
  for (int c = 0; c < channels; ++c) {
    if (!(stdev[c] > 0)) throw InvalidError("std of channel " + std::to_string(c) + " is not positive");
    scale_.push_back(1.0f / (255.0f * stdev[c]));
    shift_.push_back(-mean[c] / stdev[c]);
  }
}

size_t Transformer::output_floats() const {
  if (output_shape_[1] < 0 || output_shape_[2] < 0) return 0;
  return static_cast<size_t>(output_shape_[0]) * output_shape_[1] * output_shape_[2];
}

Transformer::Region Transformer::Plan(int width, int height, uint64_t seed) const {
  SplitMix64 random(seed);
  // Work in the coordinates of the image as resized; `factor` maps them back to the source.
  double vw = width, vh = height;
  if (options_.resize > 0) {
    auto [rw, rh] = ResizedSize(width, height, options_.resize);
    vw = rw;
    vh = rh;
  }
  double fx = width / vw, fy = height / vh;
  double x = 0, y = 0, w = vw, h = vh;
  if (options_.center_crop > 0) {
    double side = options_.center_crop;
    if (side > w || side > h) {
      throw InvalidError("center crop of " + std::to_string(options_.center_crop) + " is larger than the image (" +
                         std::to_string(static_cast<int>(w)) + "x" + std::to_string(static_cast<int>(h)) + ")");
    }
    x = std::round((w - side) / 2);
    y = std::round((h - side) / 2);
    w = h = side;
  }
  int out_w = static_cast<int>(w), out_h = static_cast<int>(h);
  if (options_.random_resized_crop > 0) {
    // torchvision's RandomResizedCrop: ten tries at a random area and aspect ratio, then the
    // centre crop at the nearest allowed ratio.
    double area = w * h;
    bool found = false;
    for (int attempt = 0; attempt < 10 && !found; ++attempt) {
      double target = area * (options_.crop_scale_min + (options_.crop_scale_max - options_.crop_scale_min) * random.Uniform());
      double log_lo = std::log(options_.crop_ratio_min), log_hi = std::log(options_.crop_ratio_max);
      double ratio = std::exp(log_lo + (log_hi - log_lo) * random.Uniform());
      double cw = std::round(std::sqrt(target * ratio)), ch = std::round(std::sqrt(target / ratio));
      if (cw > 0 && ch > 0 && cw <= w && ch <= h) {
        x += static_cast<double>(random.Below(static_cast<uint64_t>(w - cw) + 1));
        y += static_cast<double>(random.Below(static_cast<uint64_t>(h - ch) + 1));
        w = cw;
        h = ch;
        found = true;
      }
    }
    if (!found) {
      double ratio = w / h, cw = w, ch = h;
      if (ratio < options_.crop_ratio_min) {
        ch = std::round(cw / options_.crop_ratio_min);
      } else if (ratio > options_.crop_ratio_max) {
        cw = std::round(ch * options_.crop_ratio_max);
      }
      x += std::round((w - cw) / 2);
      y += std::round((h - ch) / 2);
      w = cw;
      h = ch;
    }
    out_w = out_h = options_.random_resized_crop;
  }
  Region region;
  region.x = x * fx;
  region.y = y * fy;
  region.width = w * fx;
  region.height = h * fy;
  region.out_width = out_w;
  region.out_height = out_h;
  region.flip = options_.horizontal_flip && (random.Next() >> 63) != 0;
  return region;
}

PixelRect Transformer::Needed(int width, int height, uint64_t seed) const {
  Region r = Plan(width, height, seed);
  Axis ax(r.x, r.width, r.out_width, width), ay(r.y, r.height, r.out_height, height);
  // Both axes run from low to high source indices (the flip only reverses their order).
  return PixelRect{ax.lo.front(), ay.lo.front(), ax.hi.back() - ax.lo.front() + 1, ay.hi.back() - ay.lo.front() + 1};
}

void Transformer::Apply(const Image& input, const ImageWindow* window, uint64_t seed, float* out) const {
  const int channels = output_shape_[0];
  Image converted;
  const Image* image = &input;
  if (input.channels == 3 && channels == 1) {
    converted = ConvertChannels(input, 1);
    image = &converted;
  }
  const ImageWindow whole{0, 0, image->width, image->height};
  const ImageWindow& place = window ? *window : whole;
  if (place.x < 0 || place.y < 0 || place.x + image->width > place.full_width || place.y + image->height > place.full_height) {
    throw InvalidError("a window of " + std::to_string(image->width) + "x" + std::to_string(image->height) + " at (" +
                       std::to_string(place.x) + ", " + std::to_string(place.y) + ") does not fit its image of " +
                       std::to_string(place.full_width) + "x" + std::to_string(place.full_height));
  }
  Region r = Plan(place.full_width, place.full_height, seed);
  if (r.out_width != output_shape_[2] || r.out_height != output_shape_[1]) {
    throw InvalidError("image of " + std::to_string(input.width) + "x" + std::to_string(input.height) + " gives " +
                       std::to_string(r.out_width) + "x" + std::to_string(r.out_height) + ", not the " +
                       std::to_string(output_shape_[2]) + "x" + std::to_string(output_shape_[1]) +
                       " of the table's other images (add a crop to the transforms)");
  }
  const int ow = r.out_width, oh = r.out_height, sw = image->width, sc = image->channels;
  const uint8_t* src = image->pixels.data();
  const size_t plane = static_cast<size_t>(ow) * oh;
  const bool whole_image = place.x == 0 && place.y == 0 && place.full_width == sw && place.full_height == image->height;
  bool identity = whole_image && r.x == 0 && r.y == 0 && r.width == sw && r.height == image->height && ow == sw &&
                  oh == image->height;
  if (identity) {
    for (int c = 0; c < channels; ++c) {
      const int sc_index = sc == 1 ? 0 : c;
      const float scale = scale_[c], shift = shift_[c];
      float* dst = out + c * plane;
      for (int y = 0; y < oh; ++y) {
        const uint8_t* row = src + static_cast<size_t>(y) * sw * sc + sc_index;
        float* d = dst + static_cast<size_t>(y) * ow;
        if (r.flip) {
          for (int x = 0; x < ow; ++x) d[ow - 1 - x] = row[x * sc] * scale + shift;
        } else {
          for (int x = 0; x < ow; ++x) d[x] = row[x * sc] * scale + shift;
        }
      }
    }
    return;
  }
  // Separable bilinear: each source row the output needs is interpolated horizontally once,
  // into one float row per channel (the flip folded into the column table), then pairs of those
  // rows are blended vertically and normalized in a loop the compiler vectorizes.
  Axis ax(r.x, r.width, ow, place.full_width), ay(r.y, r.height, oh, place.full_height);
  ax.Shift(place.x);
  ay.Shift(place.y);
  if (ax.lo.front() < 0 || ax.hi.back() >= sw || ay.lo.front() < 0 || ay.hi.back() >= image->height) {
    throw InvalidError("the decoded window of the image misses pixels its transform reads");
  }
  if (r.flip) {
    std::reverse(ax.lo.begin(), ax.lo.end());
    std::reverse(ax.hi.begin(), ax.hi.end());
    std::reverse(ax.weight.begin(), ax.weight.end());
  }
#ifdef SHOAL_X86_SIMD
  // Whether every chunk of 8 outputs reads within 8 source pixels (true when scaling up).
  thread_local std::vector<int> chunk_base, chunk_delta;
  bool up = kAvx2 && sc == 1 && sw >= 8;
  if (up) {
    chunk_base.resize(static_cast<size_t>(ow / 8));
    chunk_delta.resize(static_cast<size_t>(ow));
    for (int k = 0; k < ow / 8 && up; ++k) {
      const int* lo = ax.lo.data() + 8 * k;
      const int base = *std::min_element(lo, lo + 8);
      chunk_base[k] = base;
      for (int j = 0; j < 8; ++j) {
        chunk_delta[8 * k + j] = lo[j] - base;
        up = up && lo[j] - base < 8;
      }
    }
  }
#endif
  // Horizontal rows hold the source's channels (one plane for gray, shared by every output
  // channel when gray becomes RGB).
  thread_local std::vector<float> rows_buffer;
  rows_buffer.resize(static_cast<size_t>(2) * sc * ow);
  float* rows[2] = {rows_buffer.data(), rows_buffer.data() + static_cast<size_t>(sc) * ow};
  int cached[2] = {-1, -1};
  auto horizontal = [&](int source_row, float* dst) {
    const uint8_t* row = src + static_cast<size_t>(source_row) * sw * sc;
    if (sc == 1) {
#ifdef SHOAL_X86_SIMD
      if (up && source_row + 1 < image->height) {
        HorizontalGrayUpAvx2(row, chunk_base.data(), chunk_delta.data(), ax.lo.data(), ax.weight.data(), dst, ow);
        return;
      }
#endif
      thread_local std::vector<float> source;
      source.resize(static_cast<size_t>(sw));
      ToFloats(row, source.data(), sw);
      HorizontalGray(source.data(), ax.lo.data(), ax.hi.data(), ax.weight.data(), dst, ow);
    } else {
      HorizontalRgb(row, ax.lo.data(), ax.hi.data(), ax.weight.data(), dst, dst + ow, dst + 2 * static_cast<size_t>(ow), ow);
    }
  };
  // The horizontal pass of `source_row`, computed into the slot that does not hold `keep`.
  auto row_of = [&](int source_row, int keep) -> const float* {
    for (int k = 0; k < 2; ++k) {
      if (cached[k] == source_row) return rows[k];
    }
    int k = cached[0] == keep ? 1 : 0;
    horizontal(source_row, rows[k]);
    cached[k] = source_row;
    return rows[k];
  };
  // Streaming stores pay for outputs too large for the cache, written in whole lines.
  bool stream = false;
#ifdef SHOAL_X86_SIMD
  stream = kAvx512 && plane * channels * sizeof(float) >= (size_t{256} << 10) && ow % 16 == 0 &&
           reinterpret_cast<uintptr_t>(out) % 64 == 0;
#endif
  for (int y = 0; y < oh; ++y) {
    const float* top = row_of(ay.lo[y], -1);
    const float* bottom = row_of(ay.hi[y], ay.lo[y]);
    const float wy = ay.weight[y];
    for (int c = 0; c < channels; ++c) {
      const float scale = scale_[c], shift = shift_[c];
      const size_t source_plane = static_cast<size_t>(sc == 1 ? 0 : c) * ow;
      const float* t0 = top + source_plane;
      const float* b0 = bottom + source_plane;
      float* d = out + c * plane + static_cast<size_t>(y) * ow;
#ifdef SHOAL_X86_SIMD
      if (stream) {
        BlendStreamAvx512(t0, b0, wy, scale, shift, d, ow);
        continue;
      }
#endif
      Blend(t0, b0, wy, scale, shift, d, ow);
    }
  }
#ifdef SHOAL_X86_SIMD
  if (stream) _mm_sfence();  // the streamed lines are visible before the batch is handed on
#endif
}

}  // namespace shoal::data
