#include "data/transform.h"

#include <gtest/gtest.h>

#include <cmath>

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
    if (flip) EXPECT_FLOAT_EQ(out[0], 30 / 255.0f);  // the last pixel of row 0 comes first
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
