// Malformed files give a clear shoal::Error or a correct read; never a crash, a hang, another
// exception type, or (under ASan/UBSan, `make test-asan`) an out-of-bounds access.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "parquet/testing.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::parquet {
namespace {

std::string BadDir() { return testing::TestDataDir() + "/bad_data"; }
std::string DataDir() { return testing::TestDataDir() + "/data"; }

// Reads every row group of every column; returns the error message, or "" on success.
std::string ReadAll(const std::string& path, ReaderOptions options = {}) {
  try {
    testing::ShoalRows(path, options);
    return "";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_FALSE(message.empty());
    return message;
  }
}

void ExpectErrorContaining(const std::string& file, std::initializer_list<const char*> parts) {
  std::string message = ReadAll(BadDir() + "/" + file);
  ASSERT_FALSE(message.empty()) << file << " was read without an error";
  EXPECT_NE(message.find(file), std::string::npos) << message;
  for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(BadDataTest, CorruptSchemaThriftNamesTheFooter) {
  ExpectErrorContaining("PARQUET-1481.parquet", {"file footer", "unknown physical type -7"});
}

TEST(BadDataTest, CorruptDictionaryPageHeaderNamesColumnAndPage) {
  ExpectErrorContaining("ARROW-RS-GH-6229-DICTHEADER.parquet", {"column 'nation_key'", "page 0", "page header"});
}

TEST(BadDataTest, TooFewLevelsIsAnErrorNamingTheColumn) {
  ExpectErrorContaining("ARROW-GH-41321.parquet", {"column 'int64'", "page 1"});
}

TEST(BadDataTest, ZeroBitWidthDictionaryIndicesReadAsDuckDBReadsThem) {
  // Bit width 0 means every index is 0: the values are still defined.
  std::string path = BadDir() + "/ARROW-GH-43605.parquet";
  testing::OracleRows expected = testing::OracleRead(path);
  EXPECT_EQ(testing::CompareRows(expected.rows, testing::ShoalRows(path), {}), "");
}

TEST(BadDataTest, NotParquetAndTooShortFilesAreClearErrors) {
  std::string dir = std::filesystem::temp_directory_path() / ("shoal_bad_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  WriteFileAtomically(dir + "/short.parquet", "PAR1");
  WriteFileAtomically(dir + "/text.parquet", "hello, this is not a parquet file at all");
  WriteFileAtomically(dir + "/encrypted.parquet", std::string("PAR1") + std::string(20, '\0') + "PARE");
  EXPECT_NE(ReadAll(dir + "/short.parquet").find("too short"), std::string::npos);
  EXPECT_NE(ReadAll(dir + "/text.parquet").find("does not end with the magic bytes PAR1"), std::string::npos);
  try {
    FileReader::Open(dir + "/encrypted.parquet");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("encrypted"), std::string::npos) << e.what();
  }
  try {
    FileReader::Open(dir + "/missing.parquet");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  std::filesystem::remove_all(dir);
}

// Truncated and bit-flipped variants of every valid file.
class CorruptionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("shoal_corrupt_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::vector<uint8_t> bytes = ReadFile(DataDir() + "/" + GetParam() + ".parquet");
    original_.assign(bytes.begin(), bytes.end());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Reads a variant: success or shoal::Error are fine; anything else fails the test.
  void Check(const std::string& variant, const std::string& what) {
    std::string path = (dir_ / "variant.parquet").string();
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(variant.data(), static_cast<std::streamsize>(variant.size()));
    }
    try {
      ReadAll(path);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": threw a non-shoal exception: " << e.what();
    }
  }

  std::filesystem::path dir_;
  std::string original_;
};

TEST_P(CorruptionTest, TruncatedFilesGiveErrorsNotCrashes) {
  size_t size = original_.size();
  std::vector<size_t> lengths = {0, 1, 4, 8, 11, 12, size / 4, size / 2, size - 9, size - 8, size - 5, size - 1};
  for (size_t step = 1; step < 16; ++step) lengths.push_back(size * step / 16);
  for (size_t length : lengths) {
    if (length < size) Check(original_.substr(0, length), "truncated to " + std::to_string(length));
  }
}

TEST_P(CorruptionTest, BitFlippedFilesGiveErrorsOrReadsNotCrashes) {
  std::mt19937 random(12345);
  size_t size = original_.size();
  for (int trial = 0; trial < 150; ++trial) {
    std::string variant = original_;
    // Half the flips land in the footer, where a flip changes structure the most.
    size_t footer_start = size > 2048 ? size - 2048 : 0;
    size_t position = trial % 2 == 0 ? footer_start + random() % (size - footer_start) : random() % size;
    variant[position] = static_cast<char>(variant[position] ^ (1u << (random() % 8)));
    Check(variant, "bit flip at " + std::to_string(position));
  }
}


INSTANTIATE_TEST_SUITE_P(ParquetTesting, CorruptionTest, ::testing::ValuesIn(testing::DataFileStems()),
                         [](const auto& info) { return testing::ParamName(info.param); });

}  // namespace
}  // namespace shoal::parquet
