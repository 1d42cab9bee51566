// Encoding and decoding images: PNG through libpng, JPEG through libjpeg-turbo. No torch here.
#pragma once

#include <cstdint>
#include <functional>
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

/// A rectangle of an image, in pixels.
struct PixelRect {
  int x = 0, y = 0, width = 0, height = 0;
};

/// Where a decoded window lies in its image: its top-left pixel, and the whole image's size.
struct ImageWindow {
  int x = 0, y = 0;
  int full_width = 0, full_height = 0;
};

/// As DecodeImageInto, but a JPEG is decoded only as far as `want(width, height)` needs: the
/// rows and the 8- or 16-pixel columns of blocks that cover the rectangle it returns (clamped to
/// the image), given the image's size. `image` receives that window and `window` its place.
/// The window's pixels are those a whole decode gives (blocks at a subsampled image's window
/// edges are decoded with a margin for that). A PNG is decoded whole.
///
/// Every byte of the image is still entropy-decoded, so a damaged JPEG gives the same error as a
/// whole decode, unless `known_good`: the caller has seen these same bytes decode whole without
/// error (this function returned true for them), and decoding stops after the window's last
/// row. Returns whether every byte was decoded without error: true for a PNG, for a JPEG not
/// `known_good`, and for one whose window reaches its last row.
bool DecodeImageWindowInto(std::string_view bytes, int channels, const std::function<PixelRect(int, int)>& want,
                           Image* image, ImageWindow* window, bool known_good = false);

/// Bilinear resize to width x height (the same channel count).
Image Resize(const Image& image, int width, int height);

}  // namespace shoal::data
