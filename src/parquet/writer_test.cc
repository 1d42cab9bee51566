#include "parquet/writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "parquet/predicate.h"
#include "parquet/reader.h"
#include "parquet/value_format.h"
#include "util/error.h"

namespace shoal::parquet {
namespace {

ColumnVector Int64Column(const std::vector<std::optional<int64_t>>& values) {
  ColumnVector c;
  c.length = static_cast<int64_t>(values.size());
  c.data.resize(values.size() * 8, 0);
  bool nulls = false;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i]) std::memcpy(c.data.data() + 8 * i, &*values[i], 8);
    nulls |= !values[i];
  }
  if (nulls) {
    for (const auto& v : values) c.validity.push_back(v.has_value());
  }
  return c;
}

ColumnVector StringColumn(const std::vector<std::string>& values) {
  ColumnVector c;
  c.length = static_cast<int64_t>(values.size());
  c.offsets.push_back(0);
  for (const std::string& v : values) {
    c.data.insert(c.data.end(), v.begin(), v.end());
    c.offsets.push_back(static_cast<int64_t>(c.data.size()));
  }
  return c;
}

RecordBatch Batch(std::vector<ColumnVector> columns) {
  RecordBatch b;
  b.num_rows = columns.empty() ? 0 : columns[0].length;
  b.columns = std::move(columns);
  return b;
}

std::vector<WriteField> IdAndName() {
  return {WriteField::Primitive("id", PhysicalType::kInt64), WriteField::String("name")};
}

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("shoal_writer_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string PathOf(const std::string& name) const { return (dir_ / name).string(); }

  // Writes ids [0, n) with names "n<id % 10>" in batches of 1000.
  void WriteIds(const std::string& path, int64_t n, WriterOptions options) {
    FileWriter writer(path, IdAndName(), options);
    for (int64_t start = 0; start < n; start += 1000) {
      std::vector<std::optional<int64_t>> ids;
      std::vector<std::string> names;
      for (int64_t i = start; i < std::min(n, start + 1000); ++i) {
        ids.push_back(i);
        names.push_back("n" + std::to_string(i % 10));
      }
      writer.Write(Batch({Int64Column(ids), StringColumn(names)}));
    }
    writer.Close();
  }

  std::filesystem::path dir_;
};

TEST_F(WriterTest, SplitsRowGroupsAtTheRowLimit) {
  WriterOptions options;
  options.row_group_max_rows = 1000;
  WriteIds(PathOf("a.parquet"), 2500, options);
  auto reader = FileReader::Open(PathOf("a.parquet"));
  ASSERT_EQ(reader->num_row_groups(), 3);
  EXPECT_EQ(reader->metadata().row_groups[0].num_rows, 1000);
  EXPECT_EQ(reader->metadata().row_groups[2].num_rows, 500);
  EXPECT_EQ(reader->num_rows(), 2500);
  RecordBatch last = reader->ReadRowGroup(2);
  EXPECT_EQ(last.columns[0].Value<int64_t>(0), 2000);
  EXPECT_EQ(last.columns[1].Bytes(499), "n9");
}

TEST_F(WriterTest, SplitsRowGroupsAtTheByteLimit) {
  WriterOptions options;
  options.row_group_max_bytes = 16 * 1024;  // about 1,300 rows of 8 + 6 bytes
  WriteIds(PathOf("b.parquet"), 10000, options);
  auto reader = FileReader::Open(PathOf("b.parquet"));
  EXPECT_GT(reader->num_row_groups(), 4);
  EXPECT_EQ(reader->num_rows(), 10000);
}

TEST_F(WriterTest, WritesKeyValueMetadataAndStatistics) {
  WriterOptions options;
  options.key_value_metadata = {{"shoal.test", std::string("yes")}};
  options.row_group_max_rows = 100;
  WriteIds(PathOf("c.parquet"), 250, options);
  auto reader = FileReader::Open(PathOf("c.parquet"));
  ASSERT_EQ(reader->metadata().key_value_metadata.size(), 1u);
  EXPECT_EQ(reader->metadata().key_value_metadata[0].key, "shoal.test");
  EXPECT_EQ(reader->metadata().key_value_metadata[0].value, "yes");
  std::optional<ColumnStats> stats = RowGroupStatistics(reader->schema(), reader->metadata().row_groups[1], "id");
  ASSERT_TRUE(stats && stats->min && stats->max);
  EXPECT_EQ(stats->min->int_value, 100);
  EXPECT_EQ(stats->max->int_value, 199);
  EXPECT_EQ(stats->null_count, 0);
  std::optional<ColumnStats> names = RowGroupStatistics(reader->schema(), reader->metadata().row_groups[0], "name");
  ASSERT_TRUE(names && names->min && names->max);
  EXPECT_EQ(names->min->string_value, "n0");
  EXPECT_EQ(names->max->string_value, "n9");
}

TEST_F(WriterTest, PrunesRowGroupsWithThePredicateApi) {
  WriterOptions options;
  options.row_group_max_rows = 100;
  WriteIds(PathOf("d.parquet"), 1000, options);
  auto reader = FileReader::Open(PathOf("d.parquet"));
  Predicate p = Predicate::Parse("id >= 250 and id < 420");
  EXPECT_EQ(reader->SelectRowGroups(&p), (std::vector<int>{2, 3, 4}));
  Predicate q = Predicate::Parse("id = 5 or id = 999");
  EXPECT_EQ(reader->SelectRowGroups(&q), (std::vector<int>{0, 9}));
  Predicate none = Predicate::Parse("name > 'zzz'");
  EXPECT_TRUE(reader->SelectRowGroups(&none).empty());
  Predicate nulls = Predicate::Parse("id IS NULL");
  EXPECT_TRUE(reader->SelectRowGroups(&nulls).empty());
  // Row filtering agrees with pruning.
  RecordBatch group = reader->ReadRowGroup(2);
  std::vector<uint8_t> mask = p.Evaluate(group);
  EXPECT_EQ(std::count(mask.begin(), mask.end(), 1), 50);
}

TEST_F(WriterTest, TheFileAppearsOnlyWhenClosed) {
  std::string path = PathOf("e.parquet");
  {
    FileWriter writer(path, IdAndName());
    writer.Write(Batch({Int64Column({1, 2}), StringColumn({"a", "b"})}));
    EXPECT_FALSE(std::filesystem::exists(path));
  }  // destroyed without Close: nothing is left behind
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 0);
  FileWriter writer(path, IdAndName());
  writer.Write(Batch({Int64Column({1, std::nullopt}), StringColumn({"a", "b"})}));
  writer.Close();
  EXPECT_TRUE(std::filesystem::exists(path));
  auto reader = FileReader::Open(path);
  RecordBatch batch = reader->ReadRowGroup(0);
  std::string row;
  AppendJsonRow(batch, 1, &row);
  EXPECT_EQ(row, R"({"id":null,"name":"b"})");
}

TEST_F(WriterTest, RejectsBatchesThatDoNotMatchTheSchema) {
  FileWriter writer(PathOf("f.parquet"), IdAndName());
  try {
    writer.Write(Batch({Int64Column({1, 2})}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch has 1 columns, the schema"), std::string::npos) << e.what();
  }
  ColumnVector short_ids = Int64Column({1, 2});
  short_ids.data.resize(8);
  try {
    writer.Write(Batch({short_ids, StringColumn({"a", "b"})}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("column 'id' does not match"), std::string::npos) << e.what();
  }
  FileWriter required(PathOf("g.parquet"), {WriteField::Primitive("id", PhysicalType::kInt64, /*nullable=*/false)});
  EXPECT_THROW(required.Write(Batch({Int64Column({1, std::nullopt})})), Error);
}

TEST_F(WriterTest, RejectsCodecsItDoesNotOffer) {
  WriterOptions options;
  options.codec = Codec::kLzo;
  EXPECT_THROW(FileWriter(PathOf("h.parquet"), IdAndName(), options), Error);
}

}  // namespace
}  // namespace shoal::parquet
