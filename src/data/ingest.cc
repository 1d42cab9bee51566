#include "data/ingest.h"

#include <zlib.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "data/image_codec.h"
#include "delta/snapshot.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::data {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::vector<std::string>& FashionMnistClasses() {
  static const std::vector<std::string> kClasses = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return kClasses;
}

// The whole file, gunzipped when it is gzip (zlib reads plain files through as they are).
std::vector<uint8_t> ReadMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw SystemError("cannot open", path, errno);
  std::vector<uint8_t> out;
  uint8_t buffer[1 << 16];
  int n;
  while ((n = gzread(f, buffer, sizeof(buffer))) > 0) out.insert(out.end(), buffer, buffer + n);
  int errnum = 0;
  std::string message = n < 0 ? gzerror(f, &errnum) : "";
  gzclose(f);
  if (n < 0) throw InvalidError("cannot decompress '" + path + "': " + message);
  return out;
}

std::string FindIdx(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem + ".gz", stem}) {
    if (fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  }
  throw NotFoundError("no '" + stem + "[.gz]' in '" + dir + "'; install Debian's dataset-fashion-mnist (scripts/install-deps)");
}

uint32_t Be32(const uint8_t* p) { return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3]; }

// Per-channel running sums of pixel values scaled to [0, 1].
struct PixelStats {
  std::vector<double> sum, sum_squares;
  uint64_t count = 0;  // pixels per channel
  void Add(const Image& image) {
    if (sum.empty()) sum.assign(image.channels, 0), sum_squares.assign(image.channels, 0);
    if (static_cast<int>(sum.size()) != image.channels) {
      // Mixed gray and color: fold into one channel.
      for (size_t i = 0; i < image.pixels.size(); ++i) {
        double v = image.pixels[i] / 255.0;
        sum[0] += v;
        sum_squares[0] += v * v;
      }
      count += image.pixels.size();
      return;
    }
    for (size_t i = 0; i < image.pixels.size(); ++i) {
      double v = image.pixels[i] / 255.0;
      sum[i % image.channels] += v;
      sum_squares[i % image.channels] += v * v;
    }
    count += image.pixels.size() / image.channels;
  }
  json Mean() const {
    json out = json::array();
    for (double s : sum) out.push_back(count ? s / count : 0.0);
    return out;
  }
  json Std() const {
    json out = json::array();
    for (size_t c = 0; c < sum.size(); ++c) {
      double mean = count ? sum[c] / count : 0.0;
      out.push_back(count ? std::sqrt(std::max(0.0, sum_squares[c] / count - mean * mean)) : 0.0);
    }
    return out;
  }
};

// Rows of the ingest schema, accumulated until a batch is full.
class RowBuilder {
 public:
  RowBuilder() { Reset(); }
  void Add(int64_t id, int32_t label, const std::string& label_name, const std::string& image) {
    AppendBytes(batch_.columns[0].data, image.data(), image.size());
    batch_.columns[0].offsets.push_back(static_cast<int64_t>(batch_.columns[0].data.size()));
    AppendBytes(batch_.columns[1].data, &label, 4);
    AppendBytes(batch_.columns[2].data, label_name.data(), label_name.size());
    batch_.columns[2].offsets.push_back(static_cast<int64_t>(batch_.columns[2].data.size()));
    AppendBytes(batch_.columns[3].data, &id, 8);
    ++batch_.num_rows;
    for (auto& c : batch_.columns) c.length = batch_.num_rows;
  }
  int64_t rows() const { return batch_.num_rows; }
  parquet::RecordBatch Take() {
    parquet::RecordBatch out = std::move(batch_);
    Reset();
    return out;
  }

 private:
  void Reset() {
    batch_ = parquet::RecordBatch{};
    batch_.columns.resize(4);
    batch_.columns[0].offsets.push_back(0);
    batch_.columns[2].offsets.push_back(0);
  }
  parquet::RecordBatch batch_;
};

parquet::Schema IngestSchema() {
  using parquet::PhysicalType;
  using parquet::WriteField;
  return parquet::Schema::FromElements(parquet::ToSchemaElements({
      WriteField::Primitive("image", PhysicalType::kByteArray, false),
      WriteField::Primitive("label", PhysicalType::kInt32, false),
      WriteField::String("label_name", false),
      WriteField::Primitive("id", PhysicalType::kInt64, false),
  }));
}

void CheckOptions(const IngestOptions& options) {
  if (options.out.empty()) throw InvalidError("no output table given (--out)");
  if (options.image_format != "png" && options.image_format != "jpeg" && options.image_format != "raw") {
    throw InvalidError("image format '" + options.image_format + "': expected png, jpeg or raw");
  }
  if (options.resize < 0 || options.resize > 4096) throw InvalidError("resize " + std::to_string(options.resize) + " is out of 1..4096");
  if (options.rows_per_file <= 0) throw InvalidError("rows per file must be positive");
  std::error_code ec;
  if (fs::exists(fs::path(options.out) / "_delta_log", ec)) {
    throw ConflictError("table '" + options.out + "' already exists; ingest writes a new table");
  }
}

std::string Encode(const Image& image, const IngestOptions& options) {
  if (options.image_format == "png") return EncodePng(image);
  if (options.image_format == "jpeg") return EncodeJpeg(image, options.jpeg_quality);
  return std::string(image.pixels.begin(), image.pixels.end());
}

void Progress(const IngestOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

}  // namespace

IngestResult IngestFashionMnist(const std::string& split, const IngestOptions& options, const std::string& source_dir) {
  CheckOptions(options);
  if (split != "train" && split != "test") throw InvalidError("split '" + split + "': expected train or test");
  std::string prefix = split == "train" ? "train" : "t10k";
  std::string images_path = FindIdx(source_dir, prefix + "-images-idx3-ubyte");
  std::string labels_path = FindIdx(source_dir, prefix + "-labels-idx1-ubyte");
  std::vector<uint8_t> images = ReadMaybeGzip(images_path), labels = ReadMaybeGzip(labels_path);
  if (images.size() < 16 || Be32(images.data()) != 2051) throw InvalidError("'" + images_path + "' is not an IDX image file (magic 2051)");
  if (labels.size() < 8 || Be32(labels.data()) != 2049) throw InvalidError("'" + labels_path + "' is not an IDX label file (magic 2049)");
  uint64_t n = Be32(images.data() + 4), rows = Be32(images.data() + 8), cols = Be32(images.data() + 12);
  if (Be32(labels.data() + 4) != n) {
    throw InvalidError("'" + images_path + "' holds " + std::to_string(n) + " images but '" + labels_path + "' " +
                       std::to_string(Be32(labels.data() + 4)) + " labels");
  }
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096 || images.size() < 16 + n * rows * cols || labels.size() < 8 + n) {
    throw InvalidError("'" + images_path + "' is shorter than its header declares (" + std::to_string(n) + " images of " +
                       std::to_string(rows) + "x" + std::to_string(cols) + ")");
  }
  const auto& classes = FashionMnistClasses();
  int side_h = options.resize > 0 ? options.resize : static_cast<int>(rows);
  int side_w = options.resize > 0 ? options.resize : static_cast<int>(cols);
  PixelStats stats;
  RowBuilder builder;
  uint64_t next_image = 0;
  IngestResult result;
  auto next = [&](parquet::RecordBatch* batch) {
    if (next_image >= n) return false;
    uint64_t end = std::min<uint64_t>(n, next_image + static_cast<uint64_t>(options.rows_per_file));
    for (; next_image < end; ++next_image) {
      Image image;
      image.width = static_cast<int>(cols);
      image.height = static_cast<int>(rows);
      image.channels = 1;
      const uint8_t* p = images.data() + 16 + next_image * rows * cols;
      image.pixels.assign(p, p + rows * cols);
      if (options.resize > 0) image = Resize(image, side_w, side_h);
      stats.Add(image);
      int32_t label = labels[8 + next_image];
      if (label < 0 || label >= static_cast<int32_t>(classes.size())) {
        throw InvalidError("'" + labels_path + "' has label " + std::to_string(label) + " at item " + std::to_string(next_image) +
                           ", expected 0 to 9");
      }
      builder.Add(static_cast<int64_t>(next_image), label, classes[label], Encode(image, options));
    }
    *batch = builder.Take();
    Progress(options, "ingested " + std::to_string(next_image) + " / " + std::to_string(n) + " images");
    return true;
  };
  // The description needs statistics of every image, so the images are encoded in one pass and
  // the description committed with them: the table's configuration is set at creation.
  std::vector<parquet::RecordBatch> batches;
  parquet::RecordBatch batch;
  while (next(&batch)) batches.push_back(std::move(batch));
  json decode = {{"codec", options.image_format},
                 {"shape", {1, side_h, side_w}},
                 {"class_names", classes},
                 {"mean", stats.Mean()},
                 {"std", stats.Std()},
                 {"image_column", "image"},
                 {"label_column", "label"},
                 {"source", "fashion-mnist/" + split}};
  delta::AppendOptions append;
  append.configuration[kDecodeKey] = decode.dump();
  append.rows_per_file = options.rows_per_file;
  delta::AppendResult r = delta::AppendToTable(options.out, IngestSchema(), batches, append);
  result.rows = r.rows;
  result.files = r.files;
  result.version = r.version;
  result.decode_json = decode.dump();
  return result;
}

IngestResult IngestImageFolder(const std::string& dir, const IngestOptions& options) {
  CheckOptions(options);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw NotFoundError("no image folder at '" + dir + "'");
  std::vector<std::string> classes;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory()) classes.push_back(entry.path().filename().string());
  }
  std::sort(classes.begin(), classes.end());
  if (classes.empty()) throw InvalidError("'" + dir + "' has no class subdirectories (expected DIR/<class>/<image files>)");
  std::vector<std::pair<std::string, int32_t>> files;
  for (size_t c = 0; c < classes.size(); ++c) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(fs::path(dir) / classes[c])) {
      std::string ext = entry.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (entry.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".png")) names.push_back(entry.path().string());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) files.emplace_back(name, static_cast<int32_t>(c));
  }
  if (files.empty()) throw InvalidError("'" + dir + "' has no .jpg, .jpeg or .png files in its class subdirectories");
  PixelStats stats;
  std::vector<parquet::RecordBatch> batches;
  RowBuilder builder;
  json shape;
  bool same_shape = true;
  std::string codec;
  for (size_t i = 0; i < files.size(); ++i) {
    std::vector<uint8_t> raw = ReadFile(files[i].first);
    std::string bytes(raw.begin(), raw.end());
    Image image;
    try {
      image = DecodeImage(bytes);
    } catch (const Error& e) {
      throw WithContext(e, "ingesting '" + files[i].first + "'");
    }
    if (options.resize > 0) {
      image = Resize(image, options.resize, options.resize);
      bytes = Encode(image, options);
    } else if (options.image_format == "raw") {
      bytes = Encode(image, options);
    }
    std::string this_codec = options.resize > 0 || options.image_format == "raw" ? options.image_format
                             : bytes.size() > 1 && static_cast<uint8_t>(bytes[0]) == 0xff ? "jpeg" : "png";
    codec = codec.empty() || codec == this_codec ? this_codec : "auto";
    json this_shape = {image.channels, image.height, image.width};
    if (shape.is_null()) shape = this_shape;
    same_shape = same_shape && shape == this_shape;
    stats.Add(image);
    builder.Add(static_cast<int64_t>(i), files[i].second, classes[files[i].second], bytes);
    if (builder.rows() >= options.rows_per_file) batches.push_back(builder.Take());
    if ((i + 1) % 1000 == 0) Progress(options, "ingested " + std::to_string(i + 1) + " / " + std::to_string(files.size()) + " images");
  }
  if (builder.rows() > 0) batches.push_back(builder.Take());
  json decode = {{"codec", codec},
                 {"shape", same_shape ? shape : json()},
                 {"class_names", classes},
                 {"mean", stats.Mean()},
                 {"std", stats.Std()},
                 {"image_column", "image"},
                 {"label_column", "label"},
                 {"source", dir}};
  delta::AppendOptions append;
  append.configuration[kDecodeKey] = decode.dump();
  append.rows_per_file = options.rows_per_file;
  delta::AppendResult r = delta::AppendToTable(options.out, IngestSchema(), batches, append);
  IngestResult result;
  result.rows = r.rows;
  result.files = r.files;
  result.version = r.version;
  result.decode_json = decode.dump();
  return result;
}

}  // namespace shoal::data
