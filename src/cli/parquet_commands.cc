// `shoal cat`, `shoal schema` and `shoal parquet-meta`: looking into Parquet files.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <cstdio>
#include <iostream>

#include "cli/app.h"
#include "delta/scan.h"
#include "delta/snapshot.h"
#include "parquet/predicate.h"
#include "parquet/reader.h"
#include "parquet/value_format.h"
#include "util/error.h"

namespace shoal::cli {

namespace pq = shoal::parquet;

namespace {

struct CatOptions {
  std::string path;
  std::optional<int64_t> version;
  std::string timestamp;
  std::string where;
  std::vector<std::string> columns;
  int64_t limit = -1;
  std::string format = "jsonl";
  bool no_verify_checksums = false;
};

// Rows as text cells for --format table: strings bare, everything else in its JSON form.
std::string Cell(const pq::ColumnVector& column, int64_t row) {
  std::string json;
  pq::AppendJsonValue(column, row, &json);
  if (json.size() >= 2 && json.front() == '"') {
    nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
    if (parsed.is_string()) return parsed.get<std::string>();
  }
  return json;
}

void PrintTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  constexpr size_t kMaxWidth = 40;
  std::vector<size_t> widths;
  for (const std::string& h : header) widths.push_back(std::min(h.size(), kMaxWidth));
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], std::min(row[c].size(), kMaxWidth));
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string cell = cells[c];
      for (char& ch : cell) {
        if (ch == '\n' || ch == '\t') ch = ' ';
      }
      if (cell.size() > kMaxWidth) cell = cell.substr(0, kMaxWidth - 3) + "...";
      if (c) line += " | ";
      line += cell + std::string(widths[c] - std::min(widths[c], cell.size()), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  };
  print_row(header);
  std::string rule;
  for (size_t c = 0; c < widths.size(); ++c) rule += (c ? "-+-" : "") + std::string(widths[c], '-');
  std::cout << rule << "\n";
  for (const auto& row : rows) print_row(row);
}

// Prints batches as they come, up to the limit; the table format collects its rows first.
class RowPrinter {
 public:
  explicit RowPrinter(const CatOptions& options)
      : options_(options), remaining_(options.limit < 0 ? INT64_MAX : options.limit) {}
  bool done() const { return remaining_ <= 0; }
  void SetHeader(std::vector<std::string> header) { header_ = std::move(header); }

  void Print(const pq::RecordBatch& batch) {
    int64_t n = std::min(batch.num_rows, remaining_);
    std::string out;
    for (int64_t r = 0; r < n; ++r) {
      if (options_.format == "jsonl") {
        pq::AppendJsonRow(batch, r, &out);
        out.push_back('\n');
      } else {
        std::vector<std::string> cells;
        for (const pq::ColumnVector& column : batch.columns) cells.push_back(Cell(column, r));
        table_rows_.push_back(std::move(cells));
      }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    remaining_ -= n;
  }

  void Finish() {
    if (options_.format == "table") PrintTable(header_, table_rows_);
    std::fflush(stdout);
  }

 private:
  const CatOptions& options_;
  int64_t remaining_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> table_rows_;
};

std::optional<pq::Predicate> ParseWhere(const CatOptions& options) {
  if (options.where.empty()) return std::nullopt;
  return pq::Predicate::Parse(options.where);
}

void CatParquet(const CatOptions& options) {
  if (options.version || !options.timestamp.empty()) {
    throw InvalidError("--version and --timestamp apply to Delta tables; '" + options.path + "' is a Parquet file");
  }
  pq::ReaderOptions reader_options;
  reader_options.verify_checksums = !options.no_verify_checksums;
  auto reader = pq::FileReader::Open(options.path, reader_options);
  std::vector<int> fields = reader->ResolveFields(options.columns);
  std::optional<pq::Predicate> where = ParseWhere(options);
  std::vector<int> read = fields;
  if (where) {
    for (int f : reader->ResolveFields(where->Columns())) {
      if (std::find(read.begin(), read.end(), f) == read.end()) read.push_back(f);
    }
  }
  RowPrinter printer(options);
  std::vector<std::string> header;
  for (int f : fields) header.push_back(reader->schema().fields()[f].name);
  printer.SetHeader(header);
  for (int g : reader->SelectRowGroups(where ? &*where : nullptr)) {
    if (printer.done()) break;
    pq::RecordBatch batch = reader->ReadRowGroup(g, read);
    if (where) {
      std::vector<uint8_t> mask = where->Evaluate(batch);
      pq::RecordBatch kept = FilterBatch(batch, mask);
      batch = std::move(kept);
    }
    batch.columns.resize(fields.size());
    batch.field_indices.resize(fields.size());
    printer.Print(batch);
  }
  printer.Finish();
}

void CatTable(const CatOptions& options) {
  std::optional<int64_t> version = options.version;
  if (!options.timestamp.empty()) {
    pq::Field timestamp_field;
    timestamp_field.name = "--timestamp";
    timestamp_field.physical = pq::PhysicalType::kInt64;
    timestamp_field.logical.kind = pq::LogicalType::Kind::kTimestamp;
    timestamp_field.logical.unit = pq::TimeUnit::kMillis;
    int64_t ms = pq::CoerceLiteral(timestamp_field, pq::Literal::String(options.timestamp)).int_value;
    version = delta::VersionAtTimestamp(options.path, ms);
  }
  delta::Snapshot snapshot = delta::LoadSnapshot(options.path, version);
  std::optional<pq::Predicate> where = ParseWhere(options);
  delta::ScanOptions scan;
  scan.columns = options.columns;
  scan.predicate = where ? &*where : nullptr;
  RowPrinter printer(options);
  std::vector<std::string> header;
  if (options.columns.empty()) {
    for (const delta::DeltaField& f : snapshot.schema) header.push_back(f.name);
  } else {
    header = options.columns;
  }
  printer.SetHeader(header);
  struct Stop {};
  try {
    delta::ScanSnapshot(snapshot, scan, [&](const pq::RecordBatch& batch) {
      printer.Print(batch);
      if (printer.done()) throw Stop{};
    });
  } catch (const Stop&) {
  }
  printer.Finish();
}

void Cat(const CatOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(options.path, ec)) {
    CatTable(options);
  } else {
    CatParquet(options);
  }
}

// The JSON form of one statistics value, as `cat` would print it.
nlohmann::ordered_json StatValue(const pq::Field& field, const std::string& bytes) {
  pq::ColumnVector column;
  column.field = &field;
  column.length = 1;
  column.data.assign(bytes.begin(), bytes.end());
  if (field.physical == pq::PhysicalType::kByteArray) {
    column.offsets = {0, static_cast<int64_t>(bytes.size())};
  } else if (static_cast<int32_t>(bytes.size()) != pq::FixedWidthOf(field.physical, field.type_length)) {
    return nullptr;  // malformed statistics: reported as absent
  }
  std::string json;
  pq::AppendJsonValue(column, 0, &json);
  return nlohmann::ordered_json::parse(json, nullptr, false);
}

const pq::Field* FindLeafField(const std::vector<pq::Field>& fields, int column_index) {
  for (const pq::Field& f : fields) {
    if (f.kind == pq::Field::Kind::kPrimitive && f.column_index == column_index) return &f;
    if (const pq::Field* found = FindLeafField(f.children, column_index)) return found;
  }
  return nullptr;
}

nlohmann::ordered_json ParquetMeta(const pq::FileReader& reader) {
  const pq::FileMetaData& m = reader.metadata();
  nlohmann::ordered_json out;
  out["path"] = reader.path();
  out["version"] = m.version;
  out["num_rows"] = m.num_rows;
  out["created_by"] = m.created_by ? nlohmann::ordered_json(*m.created_by) : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json kv = nlohmann::ordered_json::object();
  for (const pq::KeyValue& e : m.key_value_metadata) kv[e.key] = e.value ? nlohmann::ordered_json(*e.value) : nullptr;
  out["key_value_metadata"] = kv;
  out["schema"] = reader.schema().ToString();
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  const auto& columns = reader.schema().columns();
  for (size_t g = 0; g < m.row_groups.size(); ++g) {
    const pq::RowGroup& group = m.row_groups[g];
    nlohmann::ordered_json jg;
    jg["index"] = g;
    jg["num_rows"] = group.num_rows;
    jg["total_byte_size"] = group.total_byte_size;
    if (group.total_compressed_size) jg["total_compressed_size"] = *group.total_compressed_size;
    nlohmann::ordered_json jcolumns = nlohmann::ordered_json::array();
    for (size_t c = 0; c < group.columns.size(); ++c) {
      const pq::ColumnMetaData& cm = *group.columns[c].meta_data;
      const pq::Field* field = FindLeafField(reader.schema().fields(), static_cast<int>(c));
      nlohmann::ordered_json jc;
      jc["path"] = columns[c].PathString();
      jc["type"] = pq::PhysicalTypeName(cm.type);
      std::string logical = pq::LogicalTypeName(columns[c].logical);
      jc["logical_type"] = logical.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(logical);
      jc["codec"] = pq::CodecName(cm.codec);
      nlohmann::ordered_json encodings = nlohmann::ordered_json::array();
      for (pq::Encoding e : cm.encodings) encodings.push_back(pq::EncodingName(e));
      jc["encodings"] = encodings;
      jc["num_values"] = cm.num_values;
      jc["total_compressed_size"] = cm.total_compressed_size;
      jc["total_uncompressed_size"] = cm.total_uncompressed_size;
      jc["data_page_offset"] = cm.data_page_offset;
      if (cm.dictionary_page_offset) jc["dictionary_page_offset"] = *cm.dictionary_page_offset;
      if (cm.statistics) {
        const pq::Statistics& s = *cm.statistics;
        nlohmann::ordered_json js;
        const auto& min = s.min_value ? s.min_value : s.min;
        const auto& max = s.max_value ? s.max_value : s.max;
        if (min && field) js["min"] = StatValue(*field, *min);
        if (max && field) js["max"] = StatValue(*field, *max);
        if (s.null_count) js["null_count"] = *s.null_count;
        if (s.distinct_count) js["distinct_count"] = *s.distinct_count;
        jc["statistics"] = js;
      }
      jcolumns.push_back(jc);
    }
    jg["columns"] = jcolumns;
    groups.push_back(jg);
  }
  out["row_groups"] = groups;
  return out;
}

}  // namespace

void AddParquetCommands(CLI::App& app) {
  auto cat_options = std::make_shared<CatOptions>();
  CLI::App* cat = app.add_subcommand("cat", "Print the rows of a Parquet file or a Delta table as JSON lines or a table");
  cat->add_option("PATH", cat_options->path, "Parquet file, or Delta table directory")->required();
  cat->add_option("--version", cat_options->version, "Delta table: read this version (time travel)");
  cat->add_option("--timestamp", cat_options->timestamp,
                  "Delta table: read the version current at this time (ISO 8601, UTC)")
      ->excludes("--version");
  cat->add_option("--where", cat_options->where,
                  "Only rows matching \"col op literal\" (op: = != < <= > >=, IS [NOT] NULL; join with and/or)");
  cat->add_option("--columns", cat_options->columns, "Top-level columns to print, comma-separated (default: all)")
      ->delimiter(',');
  cat->add_option("--limit", cat_options->limit, "Print at most N rows")->check(CLI::NonNegativeNumber);
  cat->add_option("--format", cat_options->format, "jsonl (one JSON object per row) or table")
      ->check(CLI::IsMember({"jsonl", "table"}))
      ->capture_default_str();
  cat->add_flag("--no-verify-checksums", cat_options->no_verify_checksums,
                "Parquet file: do not check page CRCs (a corrupt page may then read as wrong values)");
  cat->footer(
      "Values: integers exact; floats shortest round-trip (NaN/Infinity as strings); DECIMAL, DATE,\n"
      "TIME, TIMESTAMP and UUID as strings; other binary as base64; LIST as arrays; MAP as arrays of\n"
      "{\"key\",\"value\"}; STRUCT as objects. The full mapping: docs/cli.md.");
  cat->callback([cat_options] { Cat(*cat_options); });

  auto schema_path = std::make_shared<std::string>();
  CLI::App* schema = app.add_subcommand("schema", "Print the schema of a Parquet file");
  schema->add_option("PATH", *schema_path, "Parquet file")->required();
  schema->callback([schema_path] {
    auto reader = pq::FileReader::Open(*schema_path);
    std::cout << reader->schema().ToString();
  });

  auto meta_path = std::make_shared<std::string>();
  CLI::App* meta = app.add_subcommand(
      "parquet-meta", "Print a Parquet file's metadata as JSON: row groups, column chunks, encodings, codecs, sizes, statistics");
  meta->add_option("PATH", *meta_path, "Parquet file")->required();
  meta->callback([meta_path] {
    auto reader = pq::FileReader::Open(*meta_path);
    std::cout << ParquetMeta(*reader).dump(2) << "\n";
  });
}

}  // namespace shoal::cli
