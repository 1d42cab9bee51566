// `shoal runs ...` and `shoal models ...`: the tracking store and the model registry (track/).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/app.h"
#include "track/store.h"
#include "util/error.h"

namespace shoal::cli {

namespace {

using nlohmann::json;

const char* kStoreHelp = "The tracking store: a directory holding tracking.db, or sqlite:///PATH "
                         "(default: MLFLOW_TRACKING_URI, else ./shoal-data)";

json MetricJson(const track::Metric& m) {
  json value = std::isnan(m.value) ? json("NaN") : json(m.value);
  return {{"key", m.key}, {"value", value}, {"timestamp", m.timestamp}, {"step", m.step}};
}

json RunJson(const track::Run& r) {
  json metrics = json::array(), params = json::array(), tags = json::array();
  for (const auto& m : r.metrics) metrics.push_back(MetricJson(m));
  for (const auto& [k, v] : r.params) params.push_back({{"key", k}, {"value", v}});
  for (const auto& [k, v] : r.tags) tags.push_back({{"key", k}, {"value", v}});
  // MLflow's Run shape: info and data.
  return {{"info",
           {{"run_id", r.info.run_id},
            {"run_uuid", r.info.run_id},
            {"run_name", r.info.run_name},
            {"experiment_id", r.info.experiment_id},
            {"user_id", r.info.user_id},
            {"status", r.info.status},
            {"start_time", r.info.start_time},
            {"end_time", r.info.end_time},
            {"artifact_uri", r.info.artifact_uri},
            {"lifecycle_stage", r.info.lifecycle_stage}}},
          {"data", {{"metrics", metrics}, {"params", params}, {"tags", tags}}}};
}

json VersionJson(const track::ModelVersion& v) {
  return {{"name", v.name},       {"version", v.version}, {"creation_timestamp", v.creation_timestamp},
          {"source", v.source},   {"run_id", v.run_id},   {"status", v.status},
          {"aliases", v.aliases}, {"description", v.description}};
}

std::string Time(int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, "%Y-%m-%d %H:%M:%S");
  return out.str();
}

}  // namespace

void AddTrackCommands(CLI::App& app) {
  struct Args {
    std::string store, experiment, run, name, path = "model", alias, version, format = "table";
    int limit = 50;
  };
  auto a = std::make_shared<Args>();

  CLI::App* runs = app.add_subcommand("runs", "Tracked runs: list them, show one");
  runs->require_subcommand(1);
  CLI::App* ls = runs->add_subcommand("ls", "List runs, newest first");
  ls->add_option("--store", a->store, kStoreHelp);
  ls->add_option("--experiment", a->experiment, "Only this experiment's runs (by name)");
  ls->add_option("--limit", a->limit, "At most this many runs")->check(CLI::PositiveNumber);
  ls->add_option("--format", a->format, "table or jsonl (one MLflow Run object a line)")->check(CLI::IsMember({"table", "jsonl"}));
  ls->callback([a] {
    auto store = track::Store::Open(a->store);
    std::vector<std::string> ids;
    if (!a->experiment.empty()) ids.push_back(store->GetExperimentByName(a->experiment).experiment_id);
    std::vector<track::Run> list = store->ListRuns(ids, false, a->limit);
    if (a->format == "jsonl") {
      for (const auto& r : list) std::cout << RunJson(r).dump() << "\n";
      return;
    }
    std::cout << std::left << std::setw(34) << "run_id" << std::setw(22) << "name" << std::setw(10) << "status"
              << std::setw(21) << "started (UTC)" << "metrics\n";
    for (const auto& r : list) {
      std::string metrics;
      for (const auto& m : r.metrics) {
        if (m.key == "test_acc" || m.key == "val_loss" || m.key == "val_acc") {
          std::ostringstream v;
          v << m.key << "=" << std::setprecision(4) << m.value;
          metrics += (metrics.empty() ? "" : " ") + v.str();
        }
      }
      std::cout << std::left << std::setw(34) << r.info.run_id << std::setw(22) << r.info.run_name.substr(0, 21)
                << std::setw(10) << r.info.status << std::setw(21) << Time(r.info.start_time) << metrics << "\n";
    }
  });
  CLI::App* show = runs->add_subcommand("show", "One run as JSON (MLflow's Run: info, data), with its artifacts");
  show->add_option("run_id", a->run, "The run's id")->required();
  show->add_option("--store", a->store, kStoreHelp);
  show->callback([a] {
    auto store = track::Store::Open(a->store);
    track::Run r = store->GetRun(a->run);
    json out = RunJson(r);
    json artifacts = json::array();
    std::error_code ec;
    if (std::filesystem::exists(r.info.artifact_uri, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(r.info.artifact_uri)) {
        if (e.is_regular_file()) {
          artifacts.push_back({{"path", std::filesystem::relative(e.path(), r.info.artifact_uri).string()},
                               {"file_size", static_cast<int64_t>(e.file_size())}});
        }
      }
    }
    out["artifacts"] = artifacts;
    std::cout << out.dump(2) << "\n";
  });

  CLI::App* models = app.add_subcommand("models", "The model registry: list, register, alias");
  models->require_subcommand(1);
  CLI::App* mls = models->add_subcommand("ls", "Registered models with their latest version and aliases, one JSON a line");
  mls->add_option("--store", a->store, kStoreHelp);
  mls->callback([a] {
    auto store = track::Store::Open(a->store);
    for (const auto& m : store->ListRegisteredModels()) {
      json versions = json::array();
      for (const auto& v : m.latest_versions) versions.push_back(VersionJson(v));
      std::cout << json{{"name", m.name},
                        {"creation_timestamp", m.creation_timestamp},
                        {"last_updated_timestamp", m.last_updated_timestamp},
                        {"latest_versions", versions},
                        {"aliases", m.aliases}}
                       .dump()
                << "\n";
    }
  });
  CLI::App* reg = models->add_subcommand("register", "Register a run's artifact as a new version of a model");
  reg->add_option("--run", a->run, "The run whose artifact it is")->required();
  reg->add_option("--name", a->name, "The registered model (created when missing)")->required();
  reg->add_option("--path", a->path, "The artifact's path inside the run's artifacts");
  reg->add_option("--store", a->store, kStoreHelp);
  reg->callback([a] {
    auto store = track::Store::Open(a->store);
    track::Run r = store->GetRun(a->run);
    std::filesystem::path source = std::filesystem::path(r.info.artifact_uri) / a->path;
    if (!std::filesystem::exists(source)) {
      throw NotFoundError("run '" + a->run + "' has no artifact '" + a->path + "' (" + source.string() + ")");
    }
    std::cout << VersionJson(store->CreateModelVersion(a->name, source.string(), a->run)).dump() << "\n";
  });
  CLI::App* alias = models->add_subcommand("alias", "Point an alias (e.g. champion) at a version of a model");
  alias->add_option("name", a->name, "The registered model")->required();
  alias->add_option("alias", a->alias, "The alias")->required();
  alias->add_option("version", a->version, "The version it points at")->required();
  alias->add_option("--store", a->store, kStoreHelp);
  alias->callback([a] {
    auto store = track::Store::Open(a->store);
    store->SetAlias(a->name, a->alias, a->version);
    std::cout << VersionJson(store->GetModelVersionByAlias(a->name, a->alias)).dump() << "\n";
  });
}

}  // namespace shoal::cli
