// Runs the built `shoal` binary as a user would and checks the exit-status contract.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result RunShoal(const std::string& args) {
  auto dir = std::filesystem::temp_directory_path();
  auto out = dir / ("shoal_cli_out_" + std::to_string(::getpid()));
  auto err = dir / ("shoal_cli_err_" + std::to_string(::getpid()));
  std::string cmd = std::string(SHOAL_BINARY) + " " + args + " >" + out.string() + " 2>" +
                    err.string() + " </dev/null";
  int raw = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = Slurp(out);
  r.err = Slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

TEST(CliTest, HelpListsTheCommandsAndExitsZero) {
  Result r = RunShoal("--help");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("version"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Exit status"), std::string::npos) << r.out;
}

TEST(CliTest, VersionPrintsShoalAndLibtorchVersions) {
  Result r = RunShoal("version");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("shoal 0."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libtorch 1."), std::string::npos) << r.out;
}

TEST(CliTest, UnknownCommandIsAUsageErrorOnStderrWithExitTwo) {
  Result r = RunShoal("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("shoal --help"), std::string::npos) << r.err;
}

TEST(CliTest, UnknownFlagIsAUsageErrorWithExitTwo) {
  Result r = RunShoal("version --no-such-flag");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << r.err;
}

TEST(CliTest, NoCommandIsAUsageErrorWithExitTwo) {
  Result r = RunShoal("");
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(r.err.empty());
}

std::string TestFile(const std::string& name) {
  return std::string(SHOAL_TESTDATA_DIR) + "/parquet-testing/data/" + name;
}

TEST(CliTest, CatPrintsJsonLinesWithColumnsAndLimit) {
  Result r = RunShoal("cat " + TestFile("alltypes_plain.parquet") + " --columns id,string_col --limit 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"id\":4,\"string_col\":\"MA==\"}\n{\"id\":5,\"string_col\":\"MQ==\"}\n");
}

TEST(CliTest, CatPrintsNestedValuesAndTables) {
  Result r = RunShoal("cat " + TestFile("nested_maps.snappy.parquet") + " --limit 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"a\":[{\"key\":\"a\",\"value\":[{\"key\":1,\"value\":true},{\"key\":2,", 0), 0u) << r.out;
  Result table = RunShoal("cat " + TestFile("datapage_v2.snappy.parquet") + " --format table --limit 2");
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_EQ(table.out,
            "a   | b | c | d    | e\n"
            "----+---+---+------+--------\n"
            "abc | 1 | 2 | true | [1,2,3]\n"
            "abc | 2 | 3 | true | null\n");
}

TEST(CliTest, SchemaAndParquetMetaDescribeTheFile) {
  Result schema = RunShoal("schema " + TestFile("list_columns.parquet"));
  ASSERT_EQ(schema.status, 0) << schema.err;
  EXPECT_NE(schema.out.find("optional group int64_list (LIST) {"), std::string::npos) << schema.out;
  Result meta = RunShoal("parquet-meta " + TestFile("int32_decimal.parquet"));
  ASSERT_EQ(meta.status, 0) << meta.err;
  for (const char* key : {"\"row_groups\"", "\"codec\": \"UNCOMPRESSED\"", "\"encodings\"", "\"total_compressed_size\"",
                          "\"min\": \"1.00\"", "\"max\": \"24.00\"", "\"num_rows\": 24"}) {
    EXPECT_NE(meta.out.find(key), std::string::npos) << key << " in " << meta.out;
  }
}

TEST(CliTest, CorruptOrMissingFilesFailWithOneLineAndExitOne) {
  Result corrupt = RunShoal("cat " + std::string(SHOAL_TESTDATA_DIR) + "/parquet-testing/bad_data/PARQUET-1481.parquet");
  EXPECT_EQ(corrupt.status, 1);
  EXPECT_EQ(std::count(corrupt.err.begin(), corrupt.err.end(), '\n'), 1) << corrupt.err;
  EXPECT_NE(corrupt.err.find("shoal: error: reading Parquet file"), std::string::npos) << corrupt.err;
  Result missing = RunShoal("cat /no/such/file.parquet");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
  Result column = RunShoal("cat " + TestFile("alltypes_plain.parquet") + " --columns nope");
  EXPECT_EQ(column.status, 1);
  EXPECT_NE(column.err.find("no column 'nope'"), std::string::npos) << column.err;
  Result format = RunShoal("cat " + TestFile("alltypes_plain.parquet") + " --format csv");
  EXPECT_EQ(format.status, 2) << format.err;
}

}  // namespace
