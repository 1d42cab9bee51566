// The Delta golden tables (Spark-written, ../shared/testdata/delta-golden): positive cases read
// exactly the rows of their expected/ folder, compared as multisets; negative cases fail with a
// clear error. Tables without expected/ rows are log-replay cases: their snapshot must load.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "delta/scan.h"
#include "delta/snapshot.h"
#include "parquet/reader.h"
#include "parquet/testing.h"
#include "parquet/value_format.h"
#include "util/error.h"

namespace shoal::delta {
namespace {

namespace fs = std::filesystem;

std::string GoldenDir() { return std::string(SHOAL_TESTDATA_DIR) + "/delta-golden"; }

class GoldenTableTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal_golden_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::string archive = GoldenDir() + "/" + GetParam() + ".tar.zst";
    std::string command = "tar --zstd -xf '" + archive + "' -C '" + dir_.string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string TablePath() const { return (dir_ / GetParam() / "delta").string(); }
  std::string ExpectedPath() const { return (dir_ / GetParam() / "expected").string(); }

  fs::path dir_;
};

// Rows as JSON with sorted keys, sorted: a multiset that ignores column and row order.
std::vector<std::string> Normalised(std::vector<std::string> rows) {
  for (std::string& row : rows) row = nlohmann::json::parse(row).dump();
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::vector<std::string> TableRows(const std::string& table) {
  Snapshot snapshot = LoadSnapshot(table);
  std::vector<std::string> rows;
  ScanSnapshot(snapshot, {}, [&](const parquet::RecordBatch& batch) {
    for (int64_t r = 0; r < batch.num_rows; ++r) {
      std::string line;
      parquet::AppendJsonRow(batch, r, &line);
      rows.push_back(line);
    }
  });
  return rows;
}

std::vector<std::string> ExpectedRows(const std::string& dir) {
  std::vector<std::string> rows;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".parquet" || entry.path().filename().string()[0] == '.') continue;
    auto reader = parquet::FileReader::Open(entry.path().string());
    for (int g = 0; g < reader->num_row_groups(); ++g) {
      parquet::RecordBatch batch = reader->ReadRowGroup(g);
      for (int64_t r = 0; r < batch.num_rows; ++r) {
        std::string line;
        parquet::AppendJsonRow(batch, r, &line);
        rows.push_back(line);
      }
    }
  }
  return rows;
}

const std::map<std::string, std::vector<std::string>>& NegativeCases() {
  static const std::map<std::string, std::vector<std::string>> kCases = {
      {"deltalog-invalid-protocol-version", {"requires reader version 99", "at version 0"}},
      {"deltalog-state-reconstruction-without-metadata", {"has no metaData action", "at version 0"}},
      {"versions-not-contiguous", {"non-contiguous versions", "commit 1 is missing"}},
      {"no-delta-log-folder", {"is not a Delta table", "no _delta_log directory"}},
  };
  return kCases;
}

TEST_P(GoldenTableTest, ReadsTheExpectedRowsOrFailsClearly) {
  const std::string& name = GetParam();
  auto negative = NegativeCases().find(name);
  if (negative != NegativeCases().end()) {
    try {
      TableRows(TablePath());
      FAIL() << name << " was read without an error";
    } catch (const Error& e) {
      for (const std::string& part : negative->second) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      }
    }
    return;
  }
  if (!fs::exists(ExpectedPath())) {
    Snapshot snapshot = LoadSnapshot(TablePath());  // log replay only: the data files are not shipped
    EXPECT_GE(snapshot.version, 0);
    return;
  }
  std::vector<std::string> actual = TableRows(TablePath()), expected = ExpectedRows(ExpectedPath());
  // Rows in the same column order compare as they are (fast for the million-row table); only
  // when they differ are keys put in one order, so that column order alone cannot fail.
  std::sort(actual.begin(), actual.end());
  std::sort(expected.begin(), expected.end());
  if (actual != expected) EXPECT_EQ(Normalised(actual), Normalised(expected));
}

std::vector<std::string> GoldenTables() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(GoldenDir())) {
    std::string file = entry.path().filename().string();
    if (file.size() > 8 && file.substr(file.size() - 8) == ".tar.zst") names.push_back(file.substr(0, file.size() - 8));
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(DeltaGolden, GoldenTableTest, ::testing::ValuesIn(GoldenTables()),
                         [](const auto& info) { return parquet::testing::ParamName(info.param); });

}  // namespace
}  // namespace shoal::delta
