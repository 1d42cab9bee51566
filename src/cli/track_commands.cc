// `shoal runs ...` and `shoal models ...`: the tracking store and the model registry (track/).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <ctime>
#include <fstream>
#include <thread>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/app.h"
#include "track/mlflow_json.h"
#include "track/mlruns.h"
#include "track/server.h"
#include "track/store.h"
#include "util/error.h"

namespace shoal::cli {

namespace {

using nlohmann::json;

const char* kStoreHelp = "The tracking store: a directory holding tracking.db, or sqlite:///PATH "
                         "(default: MLFLOW_TRACKING_URI, else ./shoal-data)";

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
    std::string store, experiment, run, name, path = "model", alias, version, format = "table", filter;
    std::vector<std::string> order_by;
    int limit = 50;
  };
  auto a = std::make_shared<Args>();

  CLI::App* runs = app.add_subcommand("runs", "Tracked runs: list them, show one");
  runs->require_subcommand(1);
  CLI::App* ls = runs->add_subcommand("ls", "List runs, newest first, or filtered and sorted with MLflow's search grammar");
  ls->add_option("--store", a->store, kStoreHelp);
  ls->add_option("--experiment", a->experiment, "Only this experiment's runs (by name)");
  ls->add_option("--filter", a->filter, "MLflow search filter, e.g. \"metrics.val_loss < 0.3 and params.optimizer = 'adam'\"");
  ls->add_option("--order-by", a->order_by, "Sort keys, e.g. 'metrics.val_loss ASC' (repeatable; then newest first)");
  ls->add_option("--limit", a->limit, "At most this many runs")->check(CLI::PositiveNumber);
  ls->add_option("--format", a->format, "table or jsonl (one MLflow Run object a line)")->check(CLI::IsMember({"table", "jsonl"}));
  ls->callback([a] {
    auto store = track::Store::Open(a->store);
    track::Store::RunSearch q;
    if (!a->experiment.empty()) q.experiment_ids.push_back(store->GetExperimentByName(a->experiment).experiment_id);
    q.filter = a->filter;
    q.order_by = a->order_by;
    q.max_results = a->limit;
    std::vector<track::Run> list = store->SearchRuns(q).runs;
    if (a->format == "jsonl") {
      for (const auto& r : list) std::cout << track::ToJson(r).dump() << "\n";
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
    json out = track::ToJson(r);
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

  CLI::App* import = runs->add_subcommand("import-mlruns", "Import an MLflow FileStore folder (mlruns/): experiments, runs, params, tags, metrics, artifacts");
  import->add_option("dir", a->run, "The mlruns/ folder")->required()->check(CLI::ExistingDirectory);
  import->add_option("--store", a->store, kStoreHelp);
  import->callback([a] {
    auto store = track::Store::Open(a->store);
    track::ImportSummary s = track::ImportMlruns(*store, a->run);
    for (const std::string& why : s.skipped) std::cerr << "shoal runs import-mlruns: skipped " << why << "\n";
    std::cout << json{{"experiments", s.experiments}, {"runs", s.runs}, {"metrics", s.metrics}, {"skipped", s.skipped.size()}}.dump()
              << "\n";
  });

  CLI::App* models = app.add_subcommand("models", "The model registry: list, register, alias");
  models->require_subcommand(1);
  CLI::App* mls = models->add_subcommand("ls", "Registered models with their latest version and aliases, one JSON a line");
  mls->add_option("--store", a->store, kStoreHelp);
  mls->callback([a] {
    auto store = track::Store::Open(a->store);
    for (const auto& m : store->ListRegisteredModels()) std::cout << track::ToJson(m).dump() << "\n";
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
    std::cout << track::ToJson(store->CreateModelVersion(a->name, source.string(), a->run)).dump() << "\n";
  });
  CLI::App* alias = models->add_subcommand("alias", "Point an alias (e.g. champion) at a version of a model");
  alias->add_option("name", a->name, "The registered model")->required();
  alias->add_option("alias", a->alias, "The alias")->required();
  alias->add_option("version", a->version, "The version it points at")->required();
  alias->add_option("--store", a->store, kStoreHelp);
  alias->callback([a] {
    auto store = track::Store::Open(a->store);
    store->SetAlias(a->name, a->alias, a->version);
    std::cout << track::ToJson(store->GetModelVersionByAlias(a->name, a->alias)).dump() << "\n";
  });

  struct ServerArgs {
    std::string host = "127.0.0.1", store, artifacts_root, token_file;
    int port = 5000;
  };
  auto sa = std::make_shared<ServerArgs>();
  CLI::App* server = app.add_subcommand("server", "Serve the tracking store over MLflow's REST API 2.0 (runs with MLflow's clients)");
  server->add_option("--host", sa->host, "The address to listen on (127.0.0.1: this machine only)");
  server->add_option("--port", sa->port, "The port")->check(CLI::Range(1, 65535));
  server->add_option("--store", sa->store, kStoreHelp);
  server->add_option("--artifacts-root", sa->artifacts_root, "Where run artifacts are kept (default: artifacts/ beside the store)");
  server->add_option("--auth-token-file", sa->token_file, "A file holding a bearer token every request must carry");
  server->footer("Stop it with Ctrl-C or SIGTERM. Point MLflow at it: MLFLOW_TRACKING_URI=http://127.0.0.1:5000");
  server->callback([sa] {
    track::ServerOptions o;
    o.host = sa->host;
    o.port = sa->port;
    if (!sa->token_file.empty()) {
      std::ifstream in(sa->token_file);
      if (!in) throw NotFoundError("cannot read the token file '" + sa->token_file + "'");
      std::getline(in, o.auth_token);
      while (!o.auth_token.empty() && std::isspace(static_cast<unsigned char>(o.auth_token.back()))) o.auth_token.pop_back();
      if (o.auth_token.empty()) throw InvalidError("the token file '" + sa->token_file + "' is empty");
    }
    auto store = std::shared_ptr<track::Store>(track::Store::Open(sa->store, sa->artifacts_root));
    track::Server http(store, o);
    // SIGINT and SIGTERM end the server; a thread waits for them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    int port = http.Bind();
    std::cerr << "shoal server: serving " << store->path() << " at http://" << o.host << ":" << port
              << (o.auth_token.empty() ? "" : " (bearer token required)") << "\n";
    std::thread waiter([&] {
      int sig = 0;
      sigwait(&signals, &sig);
      std::cerr << "shoal server: stopping\n";
      http.Stop();
    });
    http.Run();
    pthread_kill(waiter.native_handle(), SIGTERM);  // when Run() ended by itself
    waiter.join();
  });
}

}  // namespace shoal::cli
