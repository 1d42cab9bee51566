#include "data/image_codec.h"

#include <jpeglib.h>
#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
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

// Both JPEG decoders take images of 1 to 65535 pixels a side (JPEG's own limit).
void CheckJpegSize(long width, long height) {
  if (width <= 0 || height <= 0 || width > 65535 || height > 65535) {
    throw InvalidError("JPEG of " + std::to_string(width) + "x" + std::to_string(height) + " is out of range");
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
  CheckJpegSize(width, height);
  image->width = width;
  image->height = height;
  image->channels = channels != 0 ? channels : colorspace == TJCS_GRAY ? 1 : 3;
  image->pixels.resize(static_cast<size_t>(width) * height * image->channels);
  if (tjDecompress2(handle.get(), data, bytes.size(), image->pixels.data(), width, 0, height,
                    image->channels == 1 ? TJPF_GRAY : TJPF_RGB, TJFLAG_ACCURATEDCT) != 0) {
    throw InvalidError(std::string("corrupt JPEG: ") + tjGetErrorStr2(handle.get()));
  }
}

// libjpeg's own interface, for decoding part of an image (TurboJPEG 2.1 has no cropping).
// libjpeg reports errors by calling error_exit, which must not return: it jumps back to the
// decode, in a frame that holds no C++ objects with destructors.
struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  bool warned = false;
  char message[JMSG_LENGTH_MAX] = {};
};

void OnJpegError(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// A warning (such as data ending early) counts as corruption, as TurboJPEG reports it.
void OnJpegMessage(j_common_ptr cinfo, int level) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  if (level < 0 && !errors->warned) {
    errors->warned = true;
    (*cinfo->err->format_message)(cinfo, errors->message);
  }
}

struct JpegDecoder {
  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  JpegDecoder() {
    cinfo.err = jpeg_std_error(&errors.manager);
    errors.manager.error_exit = OnJpegError;
    errors.manager.emit_message = OnJpegMessage;
    jpeg_create_decompress(&cinfo);
  }
  ~JpegDecoder() { jpeg_destroy_decompress(&cinfo); }
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
};

enum class JpegResult { kFailed, kWindow, kWhole };

// kFailed, with the decoder's message in `errors`, when libjpeg failed; kWhole when every byte
// was decoded without a warning, kWindow when decoding stopped after the window (`known_good`).
// Only plain data lives in this frame, so longjmp leaves nothing undestroyed; nothing set after
// setjmp is read after the jump.
JpegResult DecodeJpegWindow(JpegDecoder& d, const unsigned char* data, size_t size, int channels,
                            const std::function<PixelRect(int, int)>& want, bool known_good, Image* image,
                            ImageWindow* window) {
  jpeg_decompress_struct& c = d.cinfo;
  d.errors.warned = false;
  if (setjmp(d.errors.jump) != 0) {
    jpeg_abort_decompress(&c);
    return JpegResult::kFailed;
  }
  jpeg_mem_src(&c, data, static_cast<unsigned long>(size));
  jpeg_read_header(&c, TRUE);
  CheckJpegSize(c.image_width, c.image_height);  // its exception aborts the decode in the caller
  const bool gray = channels == 1 || (channels == 0 && c.jpeg_color_space == JCS_GRAYSCALE);
  c.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  c.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&c);
  const int full_width = static_cast<int>(c.output_width), full_height = static_cast<int>(c.output_height);
  PixelRect r = want(full_width, full_height);
  int x0 = std::clamp(r.x, 0, full_width - 1), y0 = std::clamp(r.y, 0, full_height - 1);
  int x1 = std::clamp(r.x + std::max(r.width, 1), x0 + 1, full_width);
  int y1 = std::clamp(r.y + std::max(r.height, 1), y0 + 1, full_height);
  // Upsampled colour components blend neighbouring blocks: a margin of one block of the
  // largest sampling keeps the window's own pixels as a whole decode gives them.
  if (c.num_components > 1) {
    const int margin = DCTSIZE * std::max(c.max_h_samp_factor, c.max_v_samp_factor);
    x0 = std::max(0, x0 - margin);
    y0 = std::max(0, y0 - margin);
    x1 = std::min(full_width, x1 + margin);
    y1 = std::min(full_height, y1 + margin);
  }
  JDIMENSION crop_x = static_cast<JDIMENSION>(x0), crop_width = static_cast<JDIMENSION>(x1 - x0);
  if (crop_width < c.output_width) jpeg_crop_scanline(&c, &crop_x, &crop_width);  // widens to whole blocks
  const int components = static_cast<int>(c.output_components);
  const size_t stride = static_cast<size_t>(crop_width) * components;
  image->width = static_cast<int>(crop_width);
  image->height = y1 - y0;
  image->channels = components;
  // One row more than the window: the image's last row is read into it (below).
  image->pixels.resize(stride * static_cast<size_t>(image->height + 1));
  window->x = static_cast<int>(crop_x);
  window->y = y0;
  window->full_width = full_width;
  window->full_height = full_height;
  if (y0 > 0) jpeg_skip_scanlines(&c, static_cast<JDIMENSION>(y0));
  while (static_cast<int>(c.output_scanline) < y1) {
    JSAMPROW row = image->pixels.data() + stride * (c.output_scanline - static_cast<JDIMENSION>(y0));
    jpeg_read_scanlines(&c, &row, 1);
  }
  if (known_good && y1 < full_height && !d.errors.warned) {
    image->pixels.resize(stride * static_cast<size_t>(image->height));
    jpeg_abort_decompress(&c);
    return JpegResult::kWindow;
  }
  // The rest is entropy-decoded without being drawn, so that damage anywhere is still found:
  // skipping all of it would decode nothing, so the last row is read.
  if (y1 < full_height) {
    if (y1 + 1 < full_height) jpeg_skip_scanlines(&c, static_cast<JDIMENSION>(full_height - y1 - 1));
    JSAMPROW row = image->pixels.data() + stride * static_cast<size_t>(image->height);
    jpeg_read_scanlines(&c, &row, 1);
  }
  image->pixels.resize(stride * static_cast<size_t>(image->height));
  jpeg_finish_decompress(&c);
  return d.errors.warned ? JpegResult::kFailed : JpegResult::kWhole;
}

}  // namespace

bool DecodeImageWindowInto(std::string_view bytes, int channels, const std::function<PixelRect(int, int)>& want,
                           Image* image, ImageWindow* window, bool known_good) {
  if (channels != 0 && channels != 1 && channels != 3) {
    throw InvalidError("cannot decode to " + std::to_string(channels) + " channels");
  }
  if (!IsJpeg(bytes)) {
    DecodeImageInto(bytes, channels, image);
    *window = ImageWindow{0, 0, image->width, image->height};
    return true;
  }
  thread_local JpegDecoder decoder;
  JpegResult result = JpegResult::kFailed;
  try {
    result = DecodeJpegWindow(decoder, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), channels, want,
                              known_good, image, window);
  } catch (...) {  // a size out of range, `want`, an allocation: leave the decoder ready for the next image
    jpeg_abort_decompress(&decoder.cinfo);
    throw;
  }
  if (result == JpegResult::kFailed) throw InvalidError(std::string("corrupt JPEG: ") + decoder.errors.message);
  return result == JpegResult::kWhole;
}

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
