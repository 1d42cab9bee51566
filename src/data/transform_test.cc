#include "data/transform.h"

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

#include "data/preview.h"
#include "util/error.h"

namespace shoal::data {
namespace {

Image Ramp(int w, int h, int channels) {
  Image image{w, h, channels, {}};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) image.pixels.push_back(static_cast<uint8_t>(x * 10 + y + c * 100));
    }
  }
  return image;
}

std::vector<float> Transform(const Transformer& t, const Image& image, uint64_t seed = 1) {
  std::vector<float> out(t.output_floats());
  t.Apply(image, seed, out.data());
  return out;
}

TEST(TransformTest, NoTransformGivesTheScaledPixelsInChwOrder) {
  TransformOptions options;
  options.normalize = false;
  Transformer t(options, {3, 4, 5});
  EXPECT_EQ(t.output_shape(), (std::vector<int>{3, 4, 5}));
  std::vector<float> out = Transform(t, Ramp(5, 4, 3));
  // Channel 2, row 3, column 4.
  EXPECT_FLOAT_EQ(out[2 * 20 + 3 * 5 + 4], (4 * 10 + 3 + 200) / 255.0f);
  EXPECT_FLOAT_EQ(out[0], 0.0f);
}

TEST(TransformTest, NormalizeUsesPerChannelMeanAndStd) {
  TransformOptions options;
  options.mean = {0.5f, 0.25f, 0.0f};
  options.std = {0.5f, 0.25f, 2.0f};
  Transformer t(options, {3, 2, 2});
  std::vector<float> out = Transform(t, Ramp(2, 2, 3));
  EXPECT_NEAR(out[0], (0 / 255.0f - 0.5f) / 0.5f, 1e-6);
  EXPECT_NEAR(out[4 + 1], (110 / 255.0f - 0.25f) / 0.25f, 1e-5);
  EXPECT_NEAR(out[8 + 3], (211 / 255.0f) / 2.0f, 1e-5);
  options.std = {0.5f, 0.0f, 1.0f};
  EXPECT_THROW(Transformer(options, {3, 2, 2}), Error);
}

TEST(TransformTest, FlipMirrorsRowsAndDependsOnlyOnTheSeed) {
  TransformOptions options;
  options.normalize = false;
  options.horizontal_flip = true;
  Transformer t(options, {1, 3, 4});
  Image image = Ramp(4, 3, 1);
  int flipped = 0;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    std::vector<float> out = Transform(t, image, seed);
    EXPECT_EQ(out, Transform(t, image, seed));
    bool flip = out[0] != 0.0f;
    flipped += flip;
    if (flip) {
      EXPECT_FLOAT_EQ(out[0], 30 / 255.0f);  // the last pixel of row 0 comes first
    }
  }
  EXPECT_GT(flipped, 16);
  EXPECT_LT(flipped, 48);
}

TEST(TransformTest, ResizeAndCenterCropFollowTorchvisionSizes) {
  TransformOptions options;
  options.normalize = false;
  options.resize = 10;
  Transformer resized(options, {1, 20, 40});
  EXPECT_EQ(resized.output_shape(), (std::vector<int>{1, 10, 20}));  // shorter side to 10
  options.center_crop = 6;
  Transformer cropped(options, {1, 20, 40});
  EXPECT_EQ(cropped.output_shape(), (std::vector<int>{1, 6, 6}));
  // A centre crop without resize is a plain window of the image.
  options.resize = 0;
  options.center_crop = 2;
  Transformer window(options, {1, 4, 4});
  std::vector<float> out = Transform(window, Ramp(4, 4, 1));
  EXPECT_FLOAT_EQ(out[0], (1 * 10 + 1) / 255.0f);
  EXPECT_FLOAT_EQ(out[3], (2 * 10 + 2) / 255.0f);
  options.center_crop = 5;
  Transformer too_big(options, {1, 4, 4});
  EXPECT_THROW(Transform(too_big, Ramp(4, 4, 1)), Error);
}

TEST(TransformTest, RandomResizedCropHasAFixedShapeAndStaysInsideTheImage) {
  TransformOptions options;
  options.normalize = false;
  options.random_resized_crop = 16;
  Transformer t(options, {});  // sizes vary by image
  EXPECT_EQ(t.output_shape(), (std::vector<int>{3, 16, 16}));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    // Pixel values x + y + 60c: a crop inside the image gives values within that channel's range.
    Image image{30 + static_cast<int>(seed), 25, 3, {}};
    for (int y = 0; y < image.height; ++y) {
      for (int x = 0; x < image.width; ++x) {
        for (int c = 0; c < 3; ++c) image.pixels.push_back(static_cast<uint8_t>(x + y + 60 * c));
      }
    }
    std::vector<float> out = Transform(t, image, seed);
    for (size_t i = 0; i < out.size(); ++i) {
      int c = static_cast<int>(i / 256);
      ASSERT_GE(out[i] * 255, c * 60 - 1e-3);
      ASSERT_LE(out[i] * 255, c * 60 + image.width - 1 + 24 + 1e-3);
    }
  }
  EXPECT_NE(Transform(t, Ramp(40, 40, 3), 1), Transform(t, Ramp(40, 40, 3), 2));
}

TEST(TransformTest, ChannelConversion) {
  TransformOptions options;
  options.normalize = false;
  options.channels = 3;
  Transformer to_rgb(options, {1, 2, 2});
  std::vector<float> out = Transform(to_rgb, Ramp(2, 2, 1));
  ASSERT_EQ(out.size(), 12u);
  EXPECT_FLOAT_EQ(out[1], out[4 + 1]);
  EXPECT_FLOAT_EQ(out[1], out[8 + 1]);
  Image gray = ConvertChannels(Image{1, 1, 3, {255, 255, 255}}, 1);
  EXPECT_EQ(gray.pixels[0], 255);
  TransformOptions two;
  two.channels = 2;
  EXPECT_THROW(Transformer(two, {1, 2, 2}), Error);
}

// A picture with detail at every scale (so that a misplaced pixel shows), as a JPEG: baseline
// (colour 4:2:0), or progressive with `subsampling` (a TJSAMP_ value).
std::string Photo(int w, int h, int channels, bool progressive = false, int subsampling = TJSAMP_420) {
  Image image{w, h, channels, {}};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        double v = 128 + 60 * std::sin(x * 0.37 + c) * std::cos(y * 0.23 - c) + 50 * std::sin((x + 2 * y) * 0.05 * (c + 1));
        image.pixels.push_back(static_cast<uint8_t>(std::clamp(v + ((x * 7 + y * 13 + c) % 11), 0.0, 255.0)));
      }
    }
  }
  if (!progressive) return EncodeJpeg(image, 90);
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), tjDestroy);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (tjCompress2(handle.get(), image.pixels.data(), w, 0, h, channels == 1 ? TJPF_GRAY : TJPF_RGB, &buffer, &size,
                  channels == 1 ? TJSAMP_GRAY : subsampling, 90, TJFLAG_PROGRESSIVE) != 0) {
    ADD_FAILURE() << tjGetErrorStr2(handle.get());
  }
  std::string out(reinterpret_cast<const char*>(buffer), size);
  tjFree(buffer);
  return out;
}

TEST(TransformTest, DecodingOnlyTheCropsWindowGivesWhatAWholeDecodeGives) {
  // Gray (no upsampling) and colour (chroma upsampled across block edges), baseline and
  // progressive, at sizes that are and are not whole blocks, through a random resized crop with
  // flip and a centre crop.
  struct Case {
    int w, h, channels, out_channels;
    bool progressive = false;
    int subsampling = TJSAMP_420;
  };
  for (Case c : {Case{224, 224, 1, 3}, Case{100, 75, 3, 3}, Case{37, 53, 1, 1}, Case{130, 90, 3, 1},
                 Case{100, 75, 3, 3, true, TJSAMP_420}, Case{99, 70, 3, 3, true, TJSAMP_444},
                 Case{131, 97, 3, 3, true, TJSAMP_422}, Case{64, 48, 1, 3, true}}) {
    const std::string jpeg = Photo(c.w, c.h, c.channels, c.progressive, c.subsampling);
    Image whole;
    DecodeImageInto(jpeg, 0, &whole);
    for (int mode = 0; mode < 2; ++mode) {
      TransformOptions options;
      options.channels = c.out_channels;
      if (mode == 0) {
        options.random_resized_crop = 24;
        options.horizontal_flip = true;
      } else {
        options.center_crop = 20;
      }
      options.mean = {0.5f};
      options.std = {0.25f};
      Transformer t(options, {c.channels, c.h, c.w});
      ASSERT_TRUE(t.reads_part());
      int smaller = 0;
      for (uint64_t seed = 0; seed < 150; ++seed) {
        Image part;
        ImageWindow window;
        DecodeImageWindowInto(jpeg, 0, [&](int w, int h) { return t.Needed(w, h, seed); }, &part, &window);
        ASSERT_EQ(window.full_width, c.w);
        ASSERT_EQ(window.full_height, c.h);
        if (part.width * part.height < c.w * c.h) ++smaller;
        std::vector<float> expected = Transform(t, whole, seed), got(t.output_floats());
        t.Apply(part, &window, seed, got.data());
        ASSERT_EQ(got, expected) << c.w << "x" << c.h << "x" << c.channels << (c.progressive ? " progressive" : "")
                                 << " mode " << mode << " seed " << seed
                                 << " window " << window.x << "," << window.y << " " << part.width << "x" << part.height;
        // Known to be good, the image is decoded only down to the window's last row: the same values.
        Image known;
        ImageWindow known_window;
        DecodeImageWindowInto(jpeg, 0, [&](int w, int h) { return t.Needed(w, h, seed); }, &known, &known_window, true);
        std::fill(got.begin(), got.end(), 0.0f);
        t.Apply(known, &known_window, seed, got.data());
        ASSERT_EQ(got, expected) << c.w << "x" << c.h << "x" << c.channels << (c.progressive ? " progressive" : "")
                                 << " mode " << mode << " seed " << seed << ", decoded as known good";
      }
      EXPECT_GT(smaller, 50) << "the window was rarely smaller than the image";
    }
  }
}

TEST(TransformTest, StreamedAndOrdinaryStoresGiveTheSameValues) {
  // 224x224x3 floats to a line-aligned address go out as streaming stores (where the CPU has
  // them); one float off, as ordinary stores. Both must give the same bits.
  Image whole;
  DecodeImageInto(Photo(224, 224, 1), 0, &whole);
  TransformOptions options;
  options.channels = 3;
  options.random_resized_crop = 224;
  options.horizontal_flip = true;
  Transformer t(options, {1, 224, 224});
  const size_t n = t.output_floats();
  std::unique_ptr<float, decltype(&std::free)> buffer(static_cast<float*>(std::aligned_alloc(64, (n + 16) * sizeof(float))),
                                                      &std::free);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    t.Apply(whole, seed, buffer.get());
    std::vector<float> aligned(buffer.get(), buffer.get() + n);
    t.Apply(whole, seed, buffer.get() + 1);
    ASSERT_EQ(std::vector<float>(buffer.get() + 1, buffer.get() + 1 + n), aligned) << "seed " << seed;
  }
}

TEST(TransformTest, AWindowDecodeStillReadsAndChecksTheWholeJpeg) {
  const std::string jpeg = Photo(64, 64, 3);
  auto top_corner = [](int, int) { return PixelRect{0, 0, 4, 4}; };
  Image part;
  ImageWindow window;
  // Cut short: the missing rows lie far below the window, and are still missed.
  EXPECT_THROW(DecodeImageWindowInto(jpeg.substr(0, jpeg.size() * 2 / 3), 0, top_corner, &part, &window), Error);
  // The decoder recovers for the next image.
  DecodeImageWindowInto(jpeg, 0, top_corner, &part, &window);
  EXPECT_LE(part.width, 32);
  EXPECT_LE(part.height, 32);
  // A transform that throws while planning leaves it ready too.
  EXPECT_THROW(DecodeImageWindowInto(jpeg, 0, [](int, int) -> PixelRect { throw InvalidError("no"); }, &part, &window),
               Error);
  DecodeImageWindowInto(jpeg, 0, top_corner, &part, &window);
  EXPECT_EQ(window.full_width, 64);
  EXPECT_THROW(DecodeImageWindowInto("\xff\xd8 not a jpeg", 0, top_corner, &part, &window), Error);
  // A window that misses what the transform reads is refused, not read out of bounds.
  TransformOptions options;
  options.center_crop = 40;
  Transformer t(options, {3, 64, 64});
  std::vector<float> out(t.output_floats());
  EXPECT_THROW(t.Apply(part, &window, 1, out.data()), Error);
}

TEST(TransformTest, AKnownGoodJpegIsDecodedOnlyDownToItsWindow) {
  for (int channels : {1, 3}) {
    const std::string jpeg = Photo(64, 64, channels);
    Image whole;
    DecodeImageInto(jpeg, 0, &whole);
    auto rows = [](int top, int height) { return [=](int, int) { return PixelRect{8, top, 16, height}; }; };
    Image part;
    ImageWindow window;
    // Not known good: every byte is decoded, and the caller learns that the image is good.
    EXPECT_TRUE(DecodeImageWindowInto(jpeg, 0, rows(4, 10), &part, &window));
    // Known good: decoding stops after the window (so it does not say the whole image is good).
    EXPECT_FALSE(DecodeImageWindowInto(jpeg, 0, rows(4, 10), &part, &window, true));
    // A window down to the last row reads every byte anyway.
    EXPECT_TRUE(DecodeImageWindowInto(jpeg, 0, rows(40, 24), &part, &window, true));
    // The proof that it stops: an image cut short below the window is an error unless known
    // good, and then the rectangle asked for holds the whole image's pixels.
    const std::string cut = jpeg.substr(0, jpeg.size() * 3 / 4);
    EXPECT_THROW(DecodeImageWindowInto(cut, 0, rows(4, 10), &part, &window), Error);
    ASSERT_FALSE(DecodeImageWindowInto(cut, 0, rows(4, 10), &part, &window, true)) << channels << " channels";
    ASSERT_TRUE(window.x <= 8 && window.y <= 4 && window.x + part.width >= 24 && window.y + part.height >= 14);
    for (int y = 4; y < 14; ++y) {
      for (int x = 8 * channels; x < 24 * channels; ++x) {
        ASSERT_EQ(part.pixels[static_cast<size_t>(y - window.y) * part.width * channels + x - window.x * channels],
                  whole.pixels[static_cast<size_t>(y) * 64 * channels + x])
            << channels << " channels, row " << y;
      }
    }
    // The decoder is ready for the next image.
    EXPECT_TRUE(DecodeImageWindowInto(jpeg, 0, rows(0, 64), &part, &window, true));
    EXPECT_EQ(part.height, 64);
  }
}

TEST(TransformTest, DamagedJpegsGiveErrorsInAWindowDecode) {
  // Flipped bytes and cut files: each decodes or is an InvalidError, never a crash (the ASan
  // build runs this too), and the decoder stays usable.
  const std::string good = Photo(48, 40, 3);
  SplitMix64 random(7);
  Image part;
  ImageWindow window;
  int errors = 0;
  for (int i = 0; i < 600; ++i) {
    std::string bad = good;
    if (i % 3 == 0) {
      bad.resize(2 + random.Below(bad.size() - 2));
    } else {
      for (int k = 0; k < 1 + i % 4; ++k) bad[random.Below(bad.size())] = static_cast<char>(random.Next());
    }
    const PixelRect want{static_cast<int>(random.Below(40)), static_cast<int>(random.Below(30)), 8, 8};
    try {
      DecodeImageWindowInto(bad, 0, [&](int, int) { return want; }, &part, &window);
      EXPECT_EQ(part.pixels.size(), static_cast<size_t>(part.width) * part.height * part.channels);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalid) << e.what();
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);
  DecodeImageWindowInto(good, 0, [](int, int) { return PixelRect{0, 0, 48, 40}; }, &part, &window);
  EXPECT_EQ(part.width, 48);
}

TEST(PreviewTest, GridHoldsEnlargedTilesAndCaptions) {
  Image white{4, 4, 1, std::vector<uint8_t>(16, 255)};
  Image red{4, 4, 3, {}};
  for (int i = 0; i < 16; ++i) red.pixels.insert(red.pixels.end(), {255, 0, 0});
  Image grid = RenderGrid({white, red, white}, {"1 Trouser", "", "9?"}, 2, 64);
  EXPECT_EQ(grid.channels, 3);
  // Two columns of 64-pixel tiles (16x enlarged) with 6-pixel gaps, two rows with captions.
  EXPECT_EQ(grid.width, 2 * (64 + 6) + 6);
  auto at = [&](int x, int y, int c) { return grid.pixels[(static_cast<size_t>(y) * grid.width + x) * 3 + c]; };
  EXPECT_EQ(at(6 + 63, 6 + 63, 0), 255);            // white tile, bottom-right pixel
  EXPECT_EQ(at(6 + 70 + 32, 6 + 32, 1), 0);         // red tile: no green
  EXPECT_EQ(at(6 + 70 + 32, 6 + 32, 0), 255);
  int text = 0;                                     // caption pixels under the first tile
  for (int y = 6 + 64; y < 6 + 64 + 18; ++y) {
    for (int x = 6; x < 6 + 64; ++x) text += at(x, y, 0) == 240;
  }
  EXPECT_GT(text, 40);
  EXPECT_THROW(RenderGrid({white}, {}, 1), Error);
}

}  // namespace
}  // namespace shoal::data
