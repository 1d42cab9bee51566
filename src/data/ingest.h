// Ingesting image data sets into Delta tables with the columns image (binary), label (int32),
// label_name (string) and id (int64). The table's metaData.configuration key "shoal.decode"
// holds a JSON description of how to decode them: codec, shape, class names, per-channel mean
// and standard deviation (never a pickle). No torch here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "delta/writer.h"

namespace shoal::data {

inline constexpr const char* kDecodeKey = "shoal.decode";

struct IngestOptions {
  std::string out;                     ///< the table to create; it must not exist
  std::string image_format = "png";    ///< png, jpeg or raw (8-bit pixels, row-major, HWC)
  int resize = 0;                      ///< square side to resize to; 0 keeps the size
  int64_t rows_per_file = 10000;       ///< rows per data file
  int jpeg_quality = 95;
  std::function<void(const std::string&)> progress;  ///< a line of progress, may be empty
};

struct IngestResult {
  int64_t rows = 0;
  int64_t files = 0;
  int64_t version = -1;
  std::string decode_json;
};

/// Fashion-MNIST from the IDX files Debian's dataset-fashion-mnist installs (gzip or plain), split
/// "train" or "test", from `source_dir` (/usr/share/datasets/fashion-mnist by default).
IngestResult IngestFashionMnist(const std::string& split, const IngestOptions& options,
                                const std::string& source_dir = "/usr/share/datasets/fashion-mnist");

/// An ImageFolder tree: one subdirectory per class (sorted names give the labels), JPEG or PNG
/// files in each. The image bytes are stored as they are (re-encoded only with resize).
IngestResult IngestImageFolder(const std::string& dir, const IngestOptions& options);

}  // namespace shoal::data
