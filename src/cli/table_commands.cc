// `shoal table info` and `shoal table history`: looking into Delta tables.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "cli/app.h"
#include "delta/checkpoint.h"
#include "delta/snapshot.h"
#include "delta/writer.h"
#include "parquet/reader.h"
#include "parquet/value_format.h"
#include "util/error.h"

namespace shoal::cli {

namespace {

// Rows of a data file: add.stats.numRecords when the writer recorded it, else the file footer.
int64_t FileRows(const delta::Snapshot& snapshot, const delta::AddFile& file) {
  if (file.stats) {
    nlohmann::json stats = nlohmann::json::parse(*file.stats, nullptr, false);
    if (stats.is_object() && stats.contains("numRecords") && stats["numRecords"].is_number_integer()) {
      return stats["numRecords"].get<int64_t>();
    }
  }
  return parquet::FileReader::Open(delta::DataFilePath(snapshot, file))->num_rows();
}

nlohmann::ordered_json Info(const delta::Snapshot& s) {
  nlohmann::ordered_json out;
  out["path"] = s.table_path;
  out["version"] = s.version;
  out["protocol"] = {{"min_reader_version", s.protocol.min_reader_version},
                     {"min_writer_version", s.protocol.min_writer_version}};
  nlohmann::ordered_json features = nlohmann::ordered_json::array();
  for (const std::string& f : s.protocol.reader_features) features.push_back(f);
  for (const std::string& f : s.protocol.writer_features) {
    if (std::find(features.begin(), features.end(), f) == features.end()) features.push_back(f);
  }
  out["features"] = features;
  out["schema"] = nlohmann::ordered_json::parse(s.metadata.schema_string);
  out["partition_columns"] = s.metadata.partition_columns;
  out["configuration"] = s.metadata.configuration;
  out["num_files"] = s.files.size();
  int64_t rows = 0, bytes = 0;
  for (const delta::AddFile& f : s.files) {
    rows += FileRows(s, f);
    bytes += f.size;
  }
  out["num_rows"] = rows;
  out["size_bytes"] = bytes;
  out["checkpoint_version"] = s.checkpoint_version >= 0 ? nlohmann::ordered_json(s.checkpoint_version) : nullptr;
  return out;
}

struct AppendArgs {
  std::string table;
  std::vector<std::string> files;
  std::string app_id;
  int64_t app_version = -1;
  std::vector<std::string> partition_by;
};

void Append(const AppendArgs& args) {
  // Every input must have the schema of the first; their rows go into one data file.
  std::vector<std::unique_ptr<parquet::FileReader>> readers;
  for (const std::string& file : args.files) {
    readers.push_back(parquet::FileReader::Open(file));
    std::string first = delta::DeltaSchemaString(readers.front()->schema());
    std::string this_one = delta::DeltaSchemaString(readers.back()->schema());
    if (this_one != first) {
      throw InvalidError("'" + file + "' has schema " + this_one + ", but '" + args.files.front() + "' has " + first);
    }
  }
  size_t reader_index = 0;
  int group = 0;
  delta::AppendOptions options;
  options.app_id = args.app_id;
  options.app_version = args.app_version;
  options.partition_columns = args.partition_by;
  delta::AppendResult result = delta::AppendToTable(
      args.table, readers.front()->schema(),
      [&](parquet::RecordBatch* batch) {
        while (reader_index < readers.size() && group >= readers[reader_index]->num_row_groups()) {
          ++reader_index;
          group = 0;
        }
        if (reader_index >= readers.size()) return false;
        *batch = readers[reader_index]->ReadRowGroup(group++);
        return true;
      },
      options);
  nlohmann::ordered_json out;
  out["table"] = args.table;
  out["version"] = result.version;
  out["created"] = result.created;
  out["duplicate"] = result.duplicate;
  out["files_added"] = result.files;
  out["rows_added"] = result.rows;
  std::cout << out.dump() << "\n";
}

}  // namespace

void AddTableCommands(CLI::App& app) {
  CLI::App* table = app.add_subcommand("table", "Delta tables: info, history, append, checkpoint, vacuum");
  table->require_subcommand(1);

  auto info_path = std::make_shared<std::string>();
  auto info_version = std::make_shared<std::optional<int64_t>>();
  CLI::App* info = table->add_subcommand(
      "info", "Print a table's state as JSON: version, protocol, features, schema, partition_columns, num_files, num_rows");
  info->add_option("TABLE", *info_path, "Delta table directory")->required();
  info->add_option("--version", *info_version, "Describe this version instead of the latest");
  info->callback([info_path, info_version] {
    std::cout << Info(delta::LoadSnapshot(*info_path, *info_version)).dump(2) << "\n";
  });

  auto append = std::make_shared<AppendArgs>();
  CLI::App* append_cmd = table->add_subcommand(
      "append", "Append the rows of Parquet files to a table in one commit, creating the table if it does not exist");
  append_cmd->add_option("TABLE", append->table, "Delta table directory")->required();
  append_cmd->add_option("FILES", append->files, "Parquet files with the table's schema")->required();
  append_cmd->add_option("--app-id", append->app_id, "Exactly-once: the writing application's id (txn appId)");
  append_cmd->add_option("--app-version", append->app_version,
                         "Exactly-once: skip the append when this app already committed this version or later")
      ->needs("--app-id");
  append_cmd->add_option("--partition-by", append->partition_by,
                         "On creation: partition by these columns, comma-separated (an existing table keeps its own)")
      ->delimiter(',');
  append_cmd->callback([append] { Append(*append); });

  auto checkpoint_path = std::make_shared<std::string>();
  CLI::App* checkpoint = table->add_subcommand("checkpoint", "Write a checkpoint of the latest version, and _last_checkpoint");
  checkpoint->add_option("TABLE", *checkpoint_path, "Delta table directory")->required();
  checkpoint->callback([checkpoint_path] {
    delta::CheckpointResult r = delta::WriteCheckpoint(*checkpoint_path);
    nlohmann::ordered_json out;
    out["table"] = *checkpoint_path;
    out["version"] = r.version;
    out["actions"] = r.actions;
    out["path"] = r.path;
    std::cout << out.dump() << "\n";
  });

  auto vacuum_path = std::make_shared<std::string>();
  auto retain_hours = std::make_shared<double>(168);
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* vacuum = table->add_subcommand(
      "vacuum", "Delete data files the latest version does not use and that left the table before the retention period");
  vacuum->add_option("TABLE", *vacuum_path, "Delta table directory")->required();
  vacuum->add_option("--retain-hours", *retain_hours, "Keep files removed less than this many hours ago (time travel needs them)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  vacuum->add_flag("--dry-run", *dry_run, "List what would be deleted, delete nothing");
  vacuum->callback([vacuum_path, retain_hours, dry_run] {
    delta::VacuumResult r = delta::Vacuum(*vacuum_path, *retain_hours, *dry_run);
    nlohmann::ordered_json out;
    out["table"] = *vacuum_path;
    out["dry_run"] = *dry_run;
    out[*dry_run ? "would_delete" : "deleted"] = r.deleted;
    out["kept_for_retention"] = r.kept_for_retention;
    std::cout << out.dump() << "\n";
  });

  auto history_path = std::make_shared<std::string>();
  CLI::App* history = table->add_subcommand("history", "Print the table's commits as JSON lines, oldest first");
  history->add_option("TABLE", *history_path, "Delta table directory")->required();
  history->callback([history_path] {
    for (const delta::CommitInfo& c : delta::History(*history_path)) {
      nlohmann::ordered_json line;
      line["version"] = c.version;
      line["timestamp"] = parquet::FormatTimestamp(c.timestamp_ms, parquet::TimeUnit::kMillis, true);
      line["operation"] = c.operation;
      line["operation_parameters"] = nlohmann::ordered_json::parse(c.operation_parameters_json, nullptr, false);
      std::cout << line.dump() << "\n";
    }
  });
}

}  // namespace shoal::cli
