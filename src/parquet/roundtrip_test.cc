// Round trips through DuckDB in both directions: DuckDB writes and shoal reads, across DuckDB's
// writer settings; shoal writes and DuckDB (and shoal) read, across shoal's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "parquet/testing.h"
#include "parquet/writer.h"
#include "util/error.h"

namespace shoal::parquet {
namespace {

// Every type of the mapping, with nulls, nesting, and values that repeat (for dictionaries).
constexpr const char* kTypesQuery = R"SQL(
SELECT
  i::INTEGER AS i32,
  (i * 1000000007)::BIGINT AS i64,
  (i % 100 - 50)::TINYINT AS i8,
  (i * 7 - 3000)::SMALLINT AS i16,
  (i % 200)::UTINYINT AS u8,
  (i * 3)::USMALLINT AS u16,
  (i * 100003)::UINTEGER AS u32,
  (i * 1000000007)::UBIGINT AS u64,
  CASE WHEN i % 7 = 0 THEN NULL ELSE i * 1.5 END::DOUBLE AS f64,
  (i / 3.0)::FLOAT AS f32,
  CASE WHEN i % 11 = 0 THEN NULL ELSE i % 2 = 0 END AS flag,
  CASE WHEN i % 5 = 0 THEN NULL ELSE 'str' || (i % 13) || repeat('x', i % 7) END AS s,
  ('blob' || i)::BLOB AS bin,
  DATE '1969-12-25' + i::INTEGER AS day,
  TIMESTAMP '1969-12-31 23:59:00' + INTERVAL (i * 61) SECOND + INTERVAL (i % 3 * 250) MILLISECOND AS ts,
  TIMESTAMPTZ '2020-01-01 00:00:00+00' + INTERVAL (i) MINUTE AS tstz,
  TIME '01:02:03' + INTERVAL (i) SECOND AS tod,
  (i * 1.25 - 100)::DECIMAL(9, 2) AS dec9,
  (i * 1.25 - 100)::DECIMAL(18, 3) AS dec18,
  (i * 12345.678901 - 99999)::DECIMAL(38, 10) AS dec38,
  ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS id,
  CASE WHEN i % 6 = 0 THEN NULL ELSE [i, NULL, i + 1] END AS ints,
  CASE WHEN i % 4 = 0 THEN NULL WHEN i % 4 = 1 THEN [] ELSE ['a' || i, NULL, 'b'] END AS strs,
  CASE WHEN i % 9 = 0 THEN NULL ELSE {'x': i, 'y': 'v' || (i % 4), 'z': [i % 3]} END AS rec,
  MAP {'k' || (i % 3): i, 'j': NULL} AS kv,
  CASE WHEN i % 10 = 0 THEN NULL ELSE [[i], [], [i, i * 2]] END AS nested
FROM range(%ROWS%) t(i)
)SQL";

// Each test writes into its own directory, removed when it ends.
class RoundTripTest {
 protected:
  RoundTripTest() {
    dir_ = std::filesystem::temp_directory_path() / ("shoal_roundtrip_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  ~RoundTripTest() { std::filesystem::remove_all(dir_); }
  std::string TempDir() const { return dir_.string(); }
  std::filesystem::path dir_;
};

std::string Query(int rows) {
  std::string q = kTypesQuery;
  q.replace(q.find("%ROWS%"), 6, std::to_string(rows));
  return q;
}

void DuckDbWrite(const std::string& path, int rows, const std::string& options) {
  std::string sql = "COPY (" + Query(rows) + ") TO '" + path + "' (FORMAT parquet" + options + ")";
  testing::CommandResult r = testing::RunOracle("sql \"" + sql + "\"");
  ASSERT_EQ(r.status, 0) << r.err;
}

struct DuckDbSettings {
  std::string name;
  std::string options;
};

class DuckDbWritesTest : public ::testing::TestWithParam<DuckDbSettings>, protected RoundTripTest {};

TEST_P(DuckDbWritesTest, ShoalReadsWhatDuckDBWrote) {
  std::string path = TempDir() + "/duckdb_" + GetParam().name + ".parquet";
  DuckDbWrite(path, 3000, GetParam().options);
  testing::OracleRows expected = testing::OracleRead(path);
  EXPECT_EQ(testing::CompareRows(expected.rows, testing::ShoalRows(path), expected.float_columns), "");
}

std::vector<DuckDbSettings> DuckDbMatrix() {
  std::vector<DuckDbSettings> out;
  for (const char* codec : {"uncompressed", "snappy", "gzip", "zstd", "brotli", "lz4_raw"}) {
    for (const char* version : {"V1", "V2"}) {
      std::string name = std::string(codec) + "_" + version;
      std::string options = std::string(", COMPRESSION '") + codec + "', PARQUET_VERSION " + version;
      out.push_back({name + "_small_groups", options + ", ROW_GROUP_SIZE 500"});
      out.push_back({name + "_one_group", options + ", ROW_GROUP_SIZE 100000"});
    }
  }
  out.push_back({"no_dictionary", ", DICTIONARY_SIZE_LIMIT 1"});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Settings, DuckDbWritesTest, ::testing::ValuesIn(DuckDbMatrix()),
                         [](const auto& info) { return info.param.name; });

struct ShoalSettings {
  std::string name;
  WriterOptions options;
};

class ShoalWritesTest : public ::testing::TestWithParam<ShoalSettings>, protected RoundTripTest {};

TEST_P(ShoalWritesTest, DuckDBReadsWhatShoalWrote) {
  // Source rows from DuckDB, read by shoal, written again by shoal's writer.
  std::string source = TempDir() + "/source.parquet";
  DuckDbWrite(source, 3000, ", ROW_GROUP_SIZE 1000");
  std::string path = TempDir() + "/shoal_" + GetParam().name + ".parquet";
  auto reader = FileReader::Open(source);
  {
    FileWriter writer(path, WriteFieldsOf(reader->schema()), GetParam().options);
    for (int g = 0; g < reader->num_row_groups(); ++g) writer.Write(reader->ReadRowGroup(g));
    writer.Close();
  }
  testing::OracleRows expected = testing::OracleRead(source);
  testing::OracleRows written = testing::OracleRead(path);
  EXPECT_EQ(testing::CompareRows(expected.rows, written.rows, expected.float_columns), "");
  EXPECT_EQ(testing::CompareRows(expected.rows, testing::ShoalRows(path), expected.float_columns), "");
}

std::vector<ShoalSettings> ShoalMatrix() {
  std::vector<ShoalSettings> out;
  const std::pair<const char*, Codec> codecs[] = {{"uncompressed", Codec::kUncompressed}, {"snappy", Codec::kSnappy},
                                                  {"gzip", Codec::kGzip}, {"zstd", Codec::kZstd}};
  for (const auto& [codec_name, codec] : codecs) {
    for (int version : {1, 2}) {
      for (bool dictionary : {true, false}) {
        ShoalSettings s;
        s.name = std::string(codec_name) + "_v" + std::to_string(version) + (dictionary ? "_dict" : "_plain");
        s.options.codec = codec;
        s.options.data_page_version = version;
        s.options.dictionary = dictionary;
        s.options.row_group_max_rows = 700;
        s.options.page_max_bytes = 4096;
        out.push_back(s);
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Settings, ShoalWritesTest, ::testing::ValuesIn(ShoalMatrix()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace shoal::parquet
