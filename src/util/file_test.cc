#include "util/file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "util/error.h"

namespace shoal {
namespace {

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shoal_file_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string PathOf(const std::string& name) { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(FileTest, AtomicWriteThenPositionalRead) {
  std::string path = PathOf("a.bin");
  WriteFileAtomically(path, "hello world");
  RandomAccessFile file(path);
  EXPECT_EQ(file.size(), 11u);
  std::vector<uint8_t> bytes = file.ReadAt(6, 5);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "world");
  WriteFileAtomically(path, "replaced");
  std::vector<uint8_t> all = ReadFile(path);
  EXPECT_EQ(std::string(all.begin(), all.end()), "replaced");
  // Only the target remains: no temporary files are left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);
}

TEST_F(FileTest, ReadPastTheEndIsAnInvalidErrorNamingTheFile) {
  std::string path = PathOf("short.bin");
  WriteFileAtomically(path, "abc");
  RandomAccessFile file(path);
  try {
    file.ReadAt(2, 5);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalid);
    EXPECT_NE(std::string(e.what()).find("short.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(3 bytes)"), std::string::npos) << e.what();
  }
}

TEST_F(FileTest, MissingFileIsNotFound) {
  try {
    RandomAccessFile file(PathOf("missing"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

TEST_F(FileTest, DirectoryIsRejected) {
  EXPECT_THROW(RandomAccessFile file(dir_.string()), Error);
}

}  // namespace
}  // namespace shoal
