// Encoding and decoding images: PNG through libpng, JPEG through libjpeg-turbo. No torch here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::data {

/// 8-bit pixels, row-major, `channels` interleaved (1 gray, 3 RGB).
struct Image {
  int width = 0;
  int height = 0;
  int channels = 1;
  std::vector<uint8_t> pixels;
};

/// Throws InvalidError for images with no pixels or an unsupported channel count.
std::string EncodePng(const Image& image);
/// quality 1..100.
std::string EncodeJpeg(const Image& image, int quality = 95);

/// Decodes PNG or JPEG (recognised by their signature) to 8-bit gray or RGB: gray stays gray,
/// anything else becomes RGB (alpha dropped). Throws InvalidError naming the format and why.
Image DecodeImage(std::string_view bytes);
/// The same into `image`, reusing its buffer; `channels` 1 or 3 converts to gray or RGB, 0
/// decides as DecodeImage does.
void DecodeImageInto(std::string_view bytes, int channels, Image* image);

/// Bilinear resize to width x height (the same channel count).
Image Resize(const Image& image, int width, int height);

}  // namespace shoal::data
