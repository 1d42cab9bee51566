#include "parquet/testing.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "parquet/value_format.h"

namespace shoal::parquet::testing {

std::string TestDataDir() { return std::string(SHOAL_TESTDATA_DIR) + "/parquet-testing"; }

std::vector<std::string> DataFileStems() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(TestDataDir() + "/data")) {
    if (entry.path().extension() == ".parquet") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ParamName(std::string stem) {
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return stem;
}

namespace {
std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}
}  // namespace

CommandResult RunCommand(const std::string& command) {
  static int counter = 0;
  std::string base = (std::filesystem::temp_directory_path() /
                      ("shoal_cmd_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
                         .string();
  std::string full = command + " >" + base + ".out 2>" + base + ".err </dev/null";
  int raw = std::system(full.c_str());
  CommandResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = Slurp(base + ".out");
  r.err = Slurp(base + ".err");
  std::filesystem::remove(base + ".out");
  std::filesystem::remove(base + ".err");
  return r;
}

CommandResult RunOracle(const std::string& args) {
  std::string script = std::string(SHOAL_SOURCE_DIR) + "/tests/oracle/duckdb_rows.mjs";
  return RunCommand("SHOAL_ORACLE_DIR=" + ShellQuote(SHOAL_ORACLE_DIR) + " node " + ShellQuote(script) + " " + args);
}

OracleRows OracleRead(const std::string& path) {
  CommandResult r = RunOracle("read " + ShellQuote(path));
  if (r.status != 0) {
    throw std::runtime_error("DuckDB oracle failed on '" + path + "' (status " + std::to_string(r.status) +
                             "; run scripts/install-deps to install it): " + r.err);
  }
  OracleRows rows;
  std::vector<std::string> lines = Lines(r.out);
  if (lines.empty()) throw std::runtime_error("DuckDB oracle printed nothing for '" + path + "'");
  nlohmann::json header = nlohmann::json::parse(lines[0]);
  rows.types_json = header["__types__"].dump();
  for (auto& [name, type] : header["__types__"].items()) {
    if (type.get<std::string>().find("FLOAT") != std::string::npos) rows.float_columns.insert(name);
  }
  rows.rows.assign(lines.begin() + 1, lines.end());
  return rows;
}

std::vector<std::string> ShoalRows(const std::string& path, ReaderOptions options) {
  auto reader = FileReader::Open(path, options);
  std::vector<std::string> rows;
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    RecordBatch batch = reader->ReadRowGroup(g);
    for (int64_t r = 0; r < batch.num_rows; ++r) {
      std::string line;
      AppendJsonRow(batch, r, &line);
      rows.push_back(std::move(line));
    }
  }
  return rows;
}

namespace {

bool Equivalent(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b, bool as_float) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_integer() && b.is_number_integer()) {
      // Compare exactly, signed or unsigned.
      return a.dump() == b.dump();
    }
    double x = a.get<double>(), y = b.get<double>();
    if (x == y) return true;
    return as_float && static_cast<float>(x) == static_cast<float>(y);
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!Equivalent(a[i], b[i], as_float)) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    auto ia = a.begin();
    auto ib = b.begin();
    for (; ia != a.end(); ++ia, ++ib) {
      if (ia.key() != ib.key() || !Equivalent(ia.value(), ib.value(), as_float)) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace

std::string CompareRows(const std::vector<std::string>& expected, const std::vector<std::string>& actual,
                        const std::set<std::string>& float_columns) {
  if (expected.size() != actual.size()) {
    return "expected " + std::to_string(expected.size()) + " rows, got " + std::to_string(actual.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    // ordered_json keeps key order, which the mapping fixes (schema order).
    nlohmann::ordered_json e = nlohmann::ordered_json::parse(expected[i], nullptr, false);
    nlohmann::ordered_json a = nlohmann::ordered_json::parse(actual[i], nullptr, false);
    if (e.is_discarded()) return "expected row " + std::to_string(i) + " is not JSON: " + expected[i];
    if (a.is_discarded()) return "row " + std::to_string(i) + " is not JSON: " + actual[i];
    if (!e.is_object() || !a.is_object() || e.size() != a.size()) {
      return "row " + std::to_string(i) + " differs:\n  expected " + expected[i] + "\n  actual   " + actual[i];
    }
    auto ie = e.begin();
    auto ia = a.begin();
    for (; ie != e.end(); ++ie, ++ia) {
      bool as_float = float_columns.count(ie.key()) > 0;
      if (ie.key() != ia.key() || !Equivalent(ie.value(), ia.value(), as_float)) {
        return "row " + std::to_string(i) + " column '" + ie.key() + "' differs:\n  expected " +
               ie.value().dump() + "\n  actual   " + ia.value().dump();
      }
    }
  }
  return "";
}

}  // namespace shoal::parquet::testing
