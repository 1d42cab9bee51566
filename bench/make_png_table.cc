// Writes Fashion-MNIST as a Parquet file of PNG images: columns image (BINARY, PNG bytes) and
// label (INT32), snappy. The input for the "binary column" scan benchmark.
//   shoal_make_png_table IMAGES.idx3-ubyte.gz LABELS.idx1-ubyte.gz OUT.parquet
#include <png.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "parquet/writer.h"
#include "util/error.h"

namespace {

std::vector<uint8_t> Gunzip(const char* path) {
  gzFile f = gzopen(path, "rb");
  if (!f) throw shoal::IOError(std::string("cannot open ") + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  if (n < 0) throw shoal::IOError(std::string("cannot decompress ") + path);
  return out;
}

uint32_t Be32(const uint8_t* p) { return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3]; }

void WriteToString(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), length);
}

std::string EncodePng(const uint8_t* pixels, int width, int height) {
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw shoal::IOError("PNG encoding failed");
  }
  png_set_write_fn(png, &out, WriteToString, nullptr);
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y) png_write_row(png, const_cast<png_bytep>(pixels + y * width));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s IMAGES.gz LABELS.gz OUT.parquet\n", argv[0]);
    return 2;
  }
  try {
    std::vector<uint8_t> images = Gunzip(argv[1]), labels = Gunzip(argv[2]);
    if (images.size() < 16 || Be32(images.data()) != 2051 || labels.size() < 8 || Be32(labels.data()) != 2049) {
      throw shoal::InvalidError("not IDX image/label files");
    }
    uint32_t n = Be32(images.data() + 4), rows = Be32(images.data() + 8), cols = Be32(images.data() + 12);
    if (images.size() < 16 + uint64_t{n} * rows * cols || labels.size() < 8 + uint64_t{n}) {
      throw shoal::InvalidError("IDX files are shorter than their headers declare");
    }
    using shoal::parquet::WriteField;
    shoal::parquet::FileWriter writer(
        argv[3], {WriteField::Primitive("image", shoal::parquet::PhysicalType::kByteArray, false),
                  WriteField::Primitive("label", shoal::parquet::PhysicalType::kInt32, false)});
    shoal::parquet::RecordBatch batch;
    batch.columns.resize(2);
    batch.columns[1].data.resize(size_t{n} * 4);
    batch.columns[0].offsets.push_back(0);
    for (uint32_t i = 0; i < n; ++i) {
      std::string png = EncodePng(images.data() + 16 + size_t{i} * rows * cols, static_cast<int>(cols), static_cast<int>(rows));
      batch.columns[0].data.insert(batch.columns[0].data.end(), png.begin(), png.end());
      batch.columns[0].offsets.push_back(static_cast<int64_t>(batch.columns[0].data.size()));
      int32_t label = labels[8 + i];
      std::memcpy(batch.columns[1].data.data() + 4 * i, &label, 4);
    }
    batch.num_rows = batch.columns[0].length = batch.columns[1].length = n;
    writer.Write(batch);
    writer.Close();
    std::printf("wrote %u PNG images to %s\n", n, argv[3]);
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal_make_png_table: %s\n", e.what());
    return 1;
  }
  return 0;
}
