#include "data/ingest.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "data/image_codec.h"
#include "delta/scan.h"
#include "delta/snapshot.h"
#include "util/error.h"

namespace shoal::data {
namespace {

namespace fs = std::filesystem;

Image Gradient(int w, int h, int channels) {
  Image image{w, h, channels, {}};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) image.pixels.push_back(static_cast<uint8_t>((x * 7 + y * 13 + c * 50) % 256));
    }
  }
  return image;
}

TEST(ImageCodecTest, PngRoundTripsGrayAndRgbExactly) {
  for (int channels : {1, 3}) {
    Image in = Gradient(31, 17, channels);
    Image out = DecodeImage(EncodePng(in));
    EXPECT_EQ(out.width, 31);
    EXPECT_EQ(out.height, 17);
    EXPECT_EQ(out.channels, channels);
    EXPECT_EQ(out.pixels, in.pixels);
  }
}

TEST(ImageCodecTest, JpegRoundTripsClosely) {
  Image in{64, 48, 3, {}};  // a smooth image: JPEG's case
  for (int y = 0; y < 48; ++y) {
    for (int x = 0; x < 64; ++x) {
      for (int c = 0; c < 3; ++c) in.pixels.push_back(static_cast<uint8_t>(x * 3 + y * 2 + c * 20));
    }
  }
  Image out = DecodeImage(EncodeJpeg(in, 95));
  ASSERT_EQ(out.pixels.size(), in.pixels.size());
  double error = 0;
  for (size_t i = 0; i < in.pixels.size(); ++i) error += std::abs(int(in.pixels[i]) - int(out.pixels[i]));
  EXPECT_LT(error / in.pixels.size(), 4.0);
}

TEST(ImageCodecTest, CorruptImagesAreErrorsNamingTheFormat) {
  std::string png = EncodePng(Gradient(8, 8, 1));
  try {
    DecodeImage(png.substr(0, png.size() / 2));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("PNG"), std::string::npos) << e.what();
  }
  std::string jpeg = EncodeJpeg(Gradient(8, 8, 3));
  EXPECT_THROW(DecodeImage(jpeg.substr(0, 20)), Error);
  EXPECT_THROW(DecodeImage("GIF89a"), Error);
}

TEST(ImageCodecTest, ResizeKeepsConstantsAndCorners) {
  Image flat{3, 3, 1, std::vector<uint8_t>(9, 77)};
  Image big = Resize(flat, 7, 5);
  EXPECT_EQ(big.pixels, std::vector<uint8_t>(35, 77));
  Image corners{2, 2, 1, {0, 100, 200, 255}};
  Image up = Resize(corners, 4, 4);
  EXPECT_EQ(up.pixels.front(), 0);
  EXPECT_EQ(up.pixels.back(), 255);
}

class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal_ingest_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string PathOf(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(IngestTest, FashionMnistTestSplitAsPng) {
  IngestOptions options;
  options.out = PathOf("test");
  options.rows_per_file = 4000;
  IngestResult result = IngestFashionMnist("test", options);
  EXPECT_EQ(result.rows, 10000);
  EXPECT_EQ(result.files, 3);
  delta::Snapshot s = delta::LoadSnapshot(options.out);
  nlohmann::json decode = nlohmann::json::parse(s.metadata.configuration.at(kDecodeKey));
  EXPECT_EQ(decode["codec"], "png");
  EXPECT_EQ(decode["shape"], nlohmann::json({1, 28, 28}));
  EXPECT_EQ(decode["class_names"][9], "Ankle boot");
  EXPECT_NEAR(decode["mean"][0].get<double>(), 0.2868, 0.002);  // Fashion-MNIST test set
  EXPECT_NEAR(decode["std"][0].get<double>(), 0.3524, 0.002);
  // Every label 1000 times; the first image decodes to the IDX file's pixels.
  std::map<int32_t, int> labels;
  std::string first_image;
  delta::ScanSnapshot(s, {}, [&](const parquet::RecordBatch& b) {
    for (int64_t r = 0; r < b.num_rows; ++r) {
      ++labels[b.columns[1].Value<int32_t>(r)];
      if (b.columns[3].Value<int64_t>(r) == 0) first_image = std::string(b.columns[0].Bytes(r));
    }
  });
  ASSERT_EQ(labels.size(), 10u);
  for (const auto& [label, count] : labels) EXPECT_EQ(count, 1000) << label;
  Image image = DecodeImage(first_image);
  gzFile f = gzopen("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", "rb");
  ASSERT_NE(f, nullptr);
  std::vector<uint8_t> head(16 + 784);
  ASSERT_EQ(gzread(f, head.data(), static_cast<unsigned>(head.size())), static_cast<int>(head.size()));
  gzclose(f);
  EXPECT_EQ(image.pixels, std::vector<uint8_t>(head.begin() + 16, head.end()));
  // A second ingest into the same table is refused.
  EXPECT_THROW(IngestFashionMnist("test", options), Error);
}

TEST_F(IngestTest, RawFormatWithResize) {
  IngestOptions options;
  options.out = PathOf("raw");
  options.image_format = "raw";
  options.resize = 14;
  IngestResult result = IngestFashionMnist("test", options);
  EXPECT_EQ(result.files, 1);
  delta::ScanSnapshot(delta::LoadSnapshot(options.out), {}, [&](const parquet::RecordBatch& b) {
    EXPECT_EQ(b.columns[0].Bytes(0).size(), 14u * 14u);
  });
  EXPECT_NE(result.decode_json.find("\"shape\":[1,14,14]"), std::string::npos) << result.decode_json;
}

TEST_F(IngestTest, ImageFolderLabelsBySortedClassNames) {
  fs::create_directories(dir_ / "flowers" / "tulips");
  fs::create_directories(dir_ / "flowers" / "daisy");
  std::ofstream(dir_ / "flowers" / "daisy" / "a.png", std::ios::binary) << EncodePng(Gradient(10, 8, 3));
  std::ofstream(dir_ / "flowers" / "daisy" / "b.JPG", std::ios::binary) << EncodeJpeg(Gradient(10, 8, 3));
  std::ofstream(dir_ / "flowers" / "tulips" / "c.jpeg", std::ios::binary) << EncodeJpeg(Gradient(12, 9, 3));
  std::ofstream(dir_ / "flowers" / "tulips" / "notes.txt") << "not an image";
  IngestOptions options;
  options.out = PathOf("flowers_table");
  IngestResult result = IngestImageFolder(PathOf("flowers"), options);
  EXPECT_EQ(result.rows, 3);
  nlohmann::json decode = nlohmann::json::parse(result.decode_json);
  EXPECT_EQ(decode["class_names"], nlohmann::json({"daisy", "tulips"}));
  EXPECT_EQ(decode["codec"], "auto");   // PNG and JPEG mixed
  EXPECT_TRUE(decode["shape"].is_null());  // sizes differ
  std::vector<std::pair<int32_t, std::string>> rows;
  delta::ScanSnapshot(delta::LoadSnapshot(options.out), {}, [&](const parquet::RecordBatch& b) {
    for (int64_t r = 0; r < b.num_rows; ++r) rows.emplace_back(b.columns[1].Value<int32_t>(r), std::string(b.columns[2].Bytes(r)));
  });
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], std::make_pair(0, std::string("daisy")));
  EXPECT_EQ(rows[2], std::make_pair(1, std::string("tulips")));
  // A corrupt image names its file.
  std::ofstream(dir_ / "flowers" / "tulips" / "bad.png", std::ios::binary) << "\x89PNG\r\n\x1a\nbroken";
  options.out = PathOf("flowers_table_2");
  try {
    IngestImageFolder(PathOf("flowers"), options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.png"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shoal::data
