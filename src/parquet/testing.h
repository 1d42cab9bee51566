// Helpers for the Parquet tests: the DuckDB oracle, reading files to JSON lines, and comparing
// rows. Test-only; not part of the library.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "parquet/reader.h"

namespace shoal::parquet::testing {

std::string TestDataDir();  // ../shared/testdata/parquet-testing
/// Names (without .parquet) of the valid files in parquet-testing's data/, sorted.
std::vector<std::string> DataFileStems();
/// A gtest parameter name for a file stem: non-alphanumerics become '_'.
std::string ParamName(std::string stem);

struct CommandResult {
  int status = -1;
  std::string out;
  std::string err;
};
/// Runs a shell command, capturing stdout and stderr.
CommandResult RunCommand(const std::string& command);

struct OracleRows {
  std::string types_json;  // {"column": "DuckDB type", ...}
  std::vector<std::string> rows;
  std::set<std::string> float_columns;  // columns whose DuckDB type involves FLOAT
};
/// Rows of `path` as DuckDB reads them, in the `shoal cat` mapping. Fails the test (gtest
/// fatal failure, via the returned status) when DuckDB cannot read the file.
CommandResult RunOracle(const std::string& args);
OracleRows OracleRead(const std::string& path);

/// Every row of a file as `shoal cat` prints it.
std::vector<std::string> ShoalRows(const std::string& path, ReaderOptions options = {});

/// Empty when the JSON rows are equal (numbers in float columns compared at float precision);
/// else a description of the first difference.
std::string CompareRows(const std::vector<std::string>& expected, const std::vector<std::string>& actual,
                        const std::set<std::string>& float_columns);

}  // namespace shoal::parquet::testing
