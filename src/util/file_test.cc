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

TEST_F(FileTest, ViewsOfSmallAndMappedRangesHoldTheFileBytes) {
  std::string path = PathOf("view.bin");
  std::string content(RandomAccessFile::kMapThreshold * 2 + 12345, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 131 + i / 4099);
  WriteFileAtomically(path, content);
  RandomAccessFile file(path);
  // A small range is read; a large one at an offset that is not page-aligned is mapped.
  for (auto [offset, length] : {std::pair<size_t, size_t>{7, 100}, {4097, RandomAccessFile::kMapThreshold + 3},
                                {0, content.size()}}) {
    ByteView view = file.ViewAt(offset, length);
    ASSERT_EQ(view.size(), length);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(view.data()), length), content.substr(offset, length))
        << "offset " << offset;
  }
  EXPECT_THROW(file.ViewAt(content.size() - 10, RandomAccessFile::kMapThreshold), Error);
  MemorySource memory("mem", "hello world");
  ByteView view = memory.ViewAt(6, 5);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(view.data()), view.size()), "world");
}

TEST_F(FileTest, ViewOfAFileTruncatedSinceOpeningIsAnIOError) {
  std::string path = PathOf("shrinks.bin");
  WriteFileAtomically(path, std::string(RandomAccessFile::kMapThreshold * 2, 'x'));
  RandomAccessFile file(path);
  std::filesystem::resize_file(path, 100);
  try {
    file.ViewAt(0, RandomAccessFile::kMapThreshold * 2);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIO);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
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
