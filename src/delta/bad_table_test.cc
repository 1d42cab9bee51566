// Damaged tables give errors that name the file and the version; nothing is read wrongly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "delta/scan.h"
#include "parquet/predicate.h"
#include "delta/snapshot.h"
#include "util/error.h"

namespace shoal::delta {
namespace {

namespace fs = std::filesystem;

class BadTableTest : public ::testing::Test {
 protected:
  // Unpacks golden table `name` and returns its table directory.
  std::string Unpack(const std::string& name) {
    dir_ = fs::temp_directory_path() / ("shoal_bad_table_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::string command = "tar --zstd -xf '" + std::string(SHOAL_TESTDATA_DIR) + "/delta-golden/" + name +
                          ".tar.zst' -C '" + dir_.string() + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);
    return (dir_ / name / "delta").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string ErrorOf(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  static void ReadAll(const std::string& table, std::optional<int64_t> version = std::nullopt) {
    Snapshot s = LoadSnapshot(table, version);
    ScanSnapshot(s, {}, [](const parquet::RecordBatch&) {});
  }

  fs::path dir_;
};

TEST_F(BadTableTest, CorruptCommitLineNamesTheFileLineAndVersion) {
  std::string table = Unpack("snapshot-data3");
  std::ofstream(table + "/_delta_log/00000000000000000002.json", std::ios::app) << "{\"add\": {\"path\": \n";
  std::string message = ErrorOf([&] { ReadAll(table); });
  EXPECT_NE(message.find("commit 2"), std::string::npos) << message;
  EXPECT_NE(message.find("00000000000000000002.json' line"), std::string::npos) << message;
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
  EXPECT_EQ(ErrorOf([&] { ReadAll(table, 1); }), "");  // earlier versions still read
}

TEST_F(BadTableTest, MissingDataFileNamesTheFileAndVersion) {
  std::string table = Unpack("snapshot-data0");
  Snapshot s = LoadSnapshot(table);
  ASSERT_FALSE(s.files.empty());
  fs::remove(DataFilePath(s, s.files[0]));
  std::string message = ErrorOf([&] { ReadAll(table); });
  EXPECT_NE(message.find(s.files[0].path), std::string::npos) << message;
  EXPECT_NE(message.find("version 0"), std::string::npos) << message;
  EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
}

TEST_F(BadTableTest, TruncatedCheckpointNamesTheCheckpoint) {
  std::string table = Unpack("basic-with-inserts-deletes-checkpoint");
  std::string checkpoint;
  for (const auto& entry : fs::directory_iterator(table + "/_delta_log")) {
    if (entry.path().string().find(".checkpoint.parquet") != std::string::npos) checkpoint = entry.path().string();
  }
  ASSERT_FALSE(checkpoint.empty());
  fs::resize_file(checkpoint, fs::file_size(checkpoint) / 2);
  std::string message = ErrorOf([&] { ReadAll(table); });
  EXPECT_NE(message.find("checkpoint of version"), std::string::npos) << message;
  EXPECT_NE(message.find(fs::path(checkpoint).filename().string()), std::string::npos) << message;
}

TEST_F(BadTableTest, VersionsThatDoNotExistOrWereCleanedUpAreNotFound) {
  std::string table = Unpack("snapshot-data3");
  try {
    LoadSnapshot(table, 99);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("has no version 99 (latest is 3)"), std::string::npos) << e.what();
  }
  fs::remove(table + "/_delta_log/00000000000000000000.json");
  try {
    LoadSnapshot(table, 2);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("cleaned up"), std::string::npos) << e.what();
  }
}

TEST_F(BadTableTest, TimeTravelReadsOlderVersions) {
  std::string table = Unpack("snapshot-data3");
  int64_t rows_v0 = 0, rows_v3 = 0;
  ScanSnapshot(LoadSnapshot(table, 0), {}, [&](const parquet::RecordBatch& b) { rows_v0 += b.num_rows; });
  ScanSnapshot(LoadSnapshot(table), {}, [&](const parquet::RecordBatch& b) { rows_v3 += b.num_rows; });
  EXPECT_EQ(rows_v0, 10);  // snapshot-data0's rows
  EXPECT_EQ(LoadSnapshot(table).version, 3);
  EXPECT_NE(rows_v0, 0);
  EXPECT_GT(rows_v3, 0);
}

}  // namespace
}  // namespace shoal::delta

namespace shoal::delta {
namespace {

TEST_F(BadTableTest, StatisticsAndPartitionValuesSkipFiles) {
  // With its data files deleted, a table can only be scanned where skipping keeps the files shut.
  std::string table = Unpack("data-skipping-basic-stats-all-types");
  Snapshot s = LoadSnapshot(table);
  for (const AddFile& f : s.files) fs::remove(DataFilePath(s, f));
  auto rows = [&](const std::string& where) {
    parquet::Predicate p = parquet::Predicate::Parse(where);
    ScanOptions options;
    options.predicate = &p;
    int64_t n = 0;
    ScanSnapshot(s, options, [&](const parquet::RecordBatch& b) { n += b.num_rows; });
    return n;
  };
  EXPECT_EQ(rows("as_int > 5"), 0);
  EXPECT_EQ(rows("as_string = 'zzz'"), 0);
  EXPECT_EQ(rows("as_date < '1999-12-31'"), 0);
  EXPECT_EQ(rows("as_timestamp < '2000-01-01T07:59:59Z'"), 0);  // stats: 2000-01-01T00:00:00.000-08:00
  EXPECT_EQ(rows("as_int IS NULL"), 0);
  EXPECT_NE(ErrorOf([&] { rows("as_int = 0"); }), "");  // may match: the file is opened, and is gone
  EXPECT_NE(ErrorOf([&] { rows("as_timestamp = '2000-01-01T08:00:00Z'"); }), "");
  // The maximum is truncated to milliseconds, so a later microsecond in the same millisecond may
  // be in the file: it must be opened.
  EXPECT_NE(ErrorOf([&] { rows("as_timestamp > '2000-01-01T08:00:00.000500Z'"); }), "");
  EXPECT_EQ(rows("as_timestamp > '2000-01-01T08:00:00.001Z'"), 0);
}

TEST_F(BadTableTest, PartitionValuesSkipFiles) {
  std::string table = Unpack("basic-decimal-table");
  Snapshot s = LoadSnapshot(table);
  parquet::Predicate p = parquet::Predicate::Parse("part > 1000000");
  std::vector<std::string> kept;
  for (const AddFile& f : s.files) {
    auto it = f.partition_values.find("part");
    if (it != f.partition_values.end() && it->second && std::stod(*it->second) > 1000000) {
      kept.push_back(f.path);
    } else {
      fs::remove(DataFilePath(s, f));
    }
  }
  ASSERT_EQ(kept.size(), 1u);
  ScanOptions options;
  options.predicate = &p;
  int64_t n = 0;
  ScanSnapshot(s, options, [&](const parquet::RecordBatch& b) { n += b.num_rows; });
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace shoal::delta
