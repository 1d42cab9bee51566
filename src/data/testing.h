// Test tables for the loader and the trainer (tests only).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "data/ingest.h"

namespace shoal::data::testing {

inline void BigEndian32(std::ofstream& out, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                         static_cast<char>(v)};
  out.write(bytes, 4);
}

/// A Delta table `dir/name` of `rows` side x side gray PNGs, through `shoal ingest`'s Fashion-MNIST
/// path, in files of `rows_per_file` rows (one row group each). Image i has pixel (0,0) = i % 256,
/// (0,1) = i / 256 and (0, side-1) = 200, the rest 100 + (i % 10) * 10 (so its label i % 10 can be
/// learned); id i.
inline std::string MakeImageTable(const std::filesystem::path& dir, const std::string& name, int rows,
                                  int rows_per_file, int side = 8, const std::string& image_format = "png") {
  std::filesystem::path source = dir / (name + "_idx");
  std::filesystem::create_directories(source);
  std::ofstream images(source / "train-images-idx3-ubyte", std::ios::binary);
  BigEndian32(images, 0x803);
  BigEndian32(images, static_cast<uint32_t>(rows));
  BigEndian32(images, static_cast<uint32_t>(side));
  BigEndian32(images, static_cast<uint32_t>(side));
  std::ofstream labels(source / "train-labels-idx1-ubyte", std::ios::binary);
  BigEndian32(labels, 0x801);
  BigEndian32(labels, static_cast<uint32_t>(rows));
  for (int i = 0; i < rows; ++i) {
    std::string pixels(static_cast<size_t>(side) * side, static_cast<char>(100 + (i % 10) * 10));
    pixels[0] = static_cast<char>(i % 256);
    pixels[1] = static_cast<char>(i / 256);
    pixels[side - 1] = static_cast<char>(200);  // right edge, to see flips
    images.write(pixels.data(), static_cast<std::streamsize>(pixels.size()));
    labels.put(static_cast<char>(i % 10));
  }
  images.close();
  labels.close();
  IngestOptions options;
  options.out = (dir / name).string();
  options.rows_per_file = rows_per_file;
  options.image_format = image_format;
  IngestFashionMnist("train", options, source.string());
  return options.out;
}

}  // namespace shoal::data::testing
