#include "data/image_codec.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "util/error.h"

namespace shoal::data {

namespace {

void CheckImage(const Image& image) {
  if (image.width <= 0 || image.height <= 0 || (image.channels != 1 && image.channels != 3) ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * image.channels) {
    throw InvalidError("image of " + std::to_string(image.width) + "x" + std::to_string(image.height) + "x" +
                       std::to_string(image.channels) + " with " + std::to_string(image.pixels.size()) +
                       " pixel bytes cannot be encoded");
  }
}

bool IsPng(std::string_view b) { return b.size() >= 8 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0; }
bool IsJpeg(std::string_view b) { return b.size() >= 3 && static_cast<uint8_t>(b[0]) == 0xff && static_cast<uint8_t>(b[1]) == 0xd8; }

// `channels` 0 keeps gray as gray and turns anything else into RGB; 1 or 3 asks for that.
void DecodePng(std::string_view bytes, int channels, Image* image) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size())) {
    throw InvalidError(std::string("corrupt PNG: ") + png.message);
  }
  bool gray = channels == 0 ? (png.format & PNG_FORMAT_FLAG_COLOR) == 0 : channels == 1;
  png.format = gray ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (png.width > 65535 || png.height > 65535) {
    png_image_free(&png);
    throw InvalidError("PNG of " + std::to_string(png.width) + "x" + std::to_string(png.height) + " is too large");
  }
  image->width = static_cast<int>(png.width);
  image->height = static_cast<int>(png.height);
  image->channels = gray ? 1 : 3;
  image->pixels.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image->pixels.data(), 0, nullptr)) {
    std::string message = png.message;
    png_image_free(&png);
    throw InvalidError("corrupt PNG: " + message);
  }
}

void DecodeJpeg(std::string_view bytes, int channels, Image* image) {
  // One decompressor per thread: creating one costs more than decoding a small image.
  thread_local std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), tjDestroy);
  if (!handle) throw IOError("cannot start the JPEG decoder");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (tjDecompressHeader3(handle.get(), data, bytes.size(), &width, &height, &subsampling, &colorspace) != 0) {
    throw InvalidError(std::string("corrupt JPEG: ") + tjGetErrorStr2(handle.get()));
  }
  if (width <= 0 || height <= 0 || width > 65535 || height > 65535) {
    throw InvalidError("JPEG of " + std::to_string(width) + "x" + std::to_string(height) + " is out of range");
  }
  image->width = width;
  image->height = height;
  image->channels = channels != 0 ? channels : colorspace == TJCS_GRAY ? 1 : 3;
  image->pixels.resize(static_cast<size_t>(width) * height * image->channels);
  if (tjDecompress2(handle.get(), data, bytes.size(), image->pixels.data(), width, 0, height,
                    image->channels == 1 ? TJPF_GRAY : TJPF_RGB, TJFLAG_ACCURATEDCT) != 0) {
    throw InvalidError(std::string("corrupt JPEG: ") + tjGetErrorStr2(handle.get()));
  }
}

}  // namespace

std::string EncodePng(const Image& image) {
  CheckImage(image);
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = image.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_get_memory_size(png, size, 0, image.pixels.data(), 0, nullptr)) {
    throw IOError(std::string("PNG encoding failed: ") + png.message);
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, image.pixels.data(), 0, nullptr)) {
    throw IOError(std::string("PNG encoding failed: ") + png.message);
  }
  out.resize(size);
  return out;
}

std::string EncodeJpeg(const Image& image, int quality) {
  CheckImage(image);
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), tjDestroy);
  if (!handle) throw IOError("cannot start the JPEG encoder");
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(handle.get(), image.pixels.data(), image.width, 0, image.height,
                       image.channels == 1 ? TJPF_GRAY : TJPF_RGB, &buffer, &size,
                       image.channels == 1 ? TJSAMP_GRAY : TJSAMP_420, std::clamp(quality, 1, 100), TJFLAG_ACCURATEDCT);
  if (rc != 0) {
    std::string message = tjGetErrorStr2(handle.get());
    tjFree(buffer);
    throw IOError("JPEG encoding failed: " + message);
  }
  std::string out(reinterpret_cast<const char*>(buffer), size);
  tjFree(buffer);
  return out;
}

Image DecodeImage(std::string_view bytes) {
  Image image;
  DecodeImageInto(bytes, 0, &image);
  return image;
}

void DecodeImageInto(std::string_view bytes, int channels, Image* image) {
  if (channels != 0 && channels != 1 && channels != 3) {
    throw InvalidError("cannot decode to " + std::to_string(channels) + " channels");
  }
  if (IsPng(bytes)) return DecodePng(bytes, channels, image);
  if (IsJpeg(bytes)) return DecodeJpeg(bytes, channels, image);
  throw InvalidError("not a PNG or JPEG image (" + std::to_string(bytes.size()) + " bytes, unknown signature)");
}

Image Resize(const Image& in, int width, int height) {
  if (width <= 0 || height <= 0) throw InvalidError("cannot resize to " + std::to_string(width) + "x" + std::to_string(height));
  Image out;
  out.width = width;
  out.height = height;
  out.channels = in.channels;
  out.pixels.resize(static_cast<size_t>(width) * height * in.channels);
  // Pixel centres aligned (half-pixel offset), clamped at the edges.
  double sx = static_cast<double>(in.width) / width, sy = static_cast<double>(in.height) / height;
  for (int y = 0; y < height; ++y) {
    double fy = std::clamp((y + 0.5) * sy - 0.5, 0.0, in.height - 1.0);
    int y0 = static_cast<int>(fy), y1 = std::min(y0 + 1, in.height - 1);
    double wy = fy - y0;
    for (int x = 0; x < width; ++x) {
      double fx = std::clamp((x + 0.5) * sx - 0.5, 0.0, in.width - 1.0);
      int x0 = static_cast<int>(fx), x1 = std::min(x0 + 1, in.width - 1);
      double wx = fx - x0;
      for (int c = 0; c < in.channels; ++c) {
        auto at = [&](int yy, int xx) { return in.pixels[(static_cast<size_t>(yy) * in.width + xx) * in.channels + c]; };
        double v = (at(y0, x0) * (1 - wx) + at(y0, x1) * wx) * (1 - wy) + (at(y1, x0) * (1 - wx) + at(y1, x1) * wx) * wy;
        out.pixels[(static_cast<size_t>(y) * width + x) * in.channels + c] = static_cast<uint8_t>(std::lround(v));
      }
    }
  }
  return out;
}

}  // namespace shoal::data
