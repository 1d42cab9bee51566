// Every valid file of parquet-testing reads exactly as DuckDB reads it (DuckDB runs as an
// independent oracle through @duckdb/node-api), and as the *_expect.csv files say.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "parquet/testing.h"
#include "util/error.h"

namespace shoal::parquet {
namespace {

using testing::CompareRows;
using testing::OracleRead;
using testing::OracleRows;
using testing::ShoalRows;

std::string DataDir() { return testing::TestDataDir() + "/data"; }


class ConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ConformanceTest, ReadsAsDuckDBReads) {
  std::string name = GetParam();
  std::string path = DataDir() + "/" + name + ".parquet";
  std::string oracle_path = path;
  ReaderOptions options;
  if (name == "hadoop_lz4_compressed") {
    // DuckDB does not read the Hadoop-framed LZ4 codec. The file holds the same rows as
    // lz4_raw_compressed.parquet, which it does read.
    oracle_path = DataDir() + "/lz4_raw_compressed.parquet";
  }
  if (name == "datapage_v1-corrupt-checksum") {
    // DuckDB does not check CRCs; with our check off the values must agree
    // (CorruptChecksumIsAnErrorNamingThePage checks the default).
    options.verify_checksums = false;
  }
  OracleRows expected = OracleRead(oracle_path);
  std::vector<std::string> actual = ShoalRows(path, options);
  if (name == "int96_from_spark") {
    // The last value was written by Spark with overflowing arithmetic; Spark reads it back as
    // 9089380393200000000 microseconds (int96_from_spark.md), which DuckDB does not.
    ASSERT_EQ(expected.rows.size(), 6u);
    expected.rows[5] = R"({"a":"290000-12-30T23:00:00"})";
  }
  std::string difference = CompareRows(expected.rows, actual, expected.float_columns);
  EXPECT_EQ(difference, "") << "DuckDB types: " << expected.types_json;
}

INSTANTIATE_TEST_SUITE_P(ParquetTesting, ConformanceTest, ::testing::ValuesIn(testing::DataFileStems()),
                         [](const auto& info) { return testing::ParamName(info.param); });

// A minimal CSV reader for the *_expect.csv files: quoted or bare fields, empty means null.
std::vector<std::vector<std::optional<std::string>>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::optional<std::string>> fields;
    size_t i = 0;
    while (i <= line.size()) {
      if (i < line.size() && line[i] == '"') {
        std::string value;
        for (++i; i < line.size(); ++i) {
          if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"') {
            value.push_back('"');
            ++i;
          } else if (line[i] == '"') {
            ++i;
            break;
          } else {
            value.push_back(line[i]);
          }
        }
        fields.push_back(value);
      } else {
        size_t end = line.find(',', i);
        if (end == std::string::npos) end = line.size();
        std::string value = line.substr(i, end - i);
        fields.push_back(value.empty() ? std::nullopt : std::optional<std::string>(value));
        i = end;
      }
      ++i;  // the comma
    }
    rows.push_back(fields);
  }
  return rows;
}

class ExpectCsvTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExpectCsvTest, MatchesTheExpectedCsv) {
  std::string name = GetParam();
  auto csv = ReadCsv(DataDir() + "/" + name + "_expect.csv");
  std::vector<std::string> rows = ShoalRows(DataDir() + "/" + name + ".parquet");
  ASSERT_EQ(rows.size() + 1, csv.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    nlohmann::ordered_json row = nlohmann::ordered_json::parse(rows[r]);
    ASSERT_EQ(row.size(), csv[0].size());
    size_t c = 0;
    for (auto it = row.begin(); it != row.end(); ++it, ++c) {
      ASSERT_EQ(it.key(), *csv[0][c]);
      const std::optional<std::string>& want = csv[r + 1][c];
      if (!want) {
        EXPECT_TRUE(it.value().is_null()) << "row " << r << " column " << it.key();
      } else if (it.value().is_string()) {
        EXPECT_EQ(it.value().get<std::string>(), *want) << "row " << r << " column " << it.key();
      } else {
        EXPECT_EQ(it.value().dump(), *want) << "row " << r << " column " << it.key();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ParquetTesting, ExpectCsvTest,
                         ::testing::Values("delta_binary_packed", "delta_byte_array"));

TEST(ConformanceTest, CorruptChecksumIsAnErrorNamingThePage) {
  std::string path = DataDir() + "/datapage_v1-corrupt-checksum.parquet";
  try {
    ShoalRows(path);
    FAIL() << "expected a CRC error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInvalid);
    EXPECT_NE(message.find("datapage_v1-corrupt-checksum.parquet"), std::string::npos) << message;
    EXPECT_NE(message.find("column 'a'"), std::string::npos) << message;
    EXPECT_NE(message.find("page 0"), std::string::npos) << message;
    EXPECT_NE(message.find("CRC mismatch"), std::string::npos) << message;
  }
}

TEST(ConformanceTest, ChecksumsOfAValidFileAreVerified) {
  // This file stores CRCs; reading with verification on must succeed.
  EXPECT_EQ(ShoalRows(DataDir() + "/datapage_v1-snappy-compressed-checksum.parquet").size(), 5120u);
}

}  // namespace
}  // namespace shoal::parquet
