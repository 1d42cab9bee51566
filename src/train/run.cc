#include "train/run.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <filesystem>
#include <iostream>

#include "data/ingest.h"
#include "delta/snapshot.h"
#include "track/store.h"
#include "track/tracker.h"
#include "train/tracking_callback.h"
#include "dist/cluster.h"
#include "dist/process_group.h"
#include "delta/writer.h"
#include "models/zoo.h"
#include "parquet/writer.h"
#include "train/network_module.h"
#include "train/trainer.h"
#include "util/buffer.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::train {

using nlohmann::json;

namespace {

// Every key a config may hold, with its default.
json Defaults() {
  return {
      {"model",
       {{"name", "simple_cnn"},
        {"num_classes", 10},
        {"dropout", 0.25},
        {"hidden", json::array()},
        {"stem", "imagenet"},
        {"width_mult", 1.0}}},
      {"optimizer",
       {{"name", "adam"}, {"lr", 0.001}, {"weight_decay", 0.0}, {"momentum", 0.9}, {"nesterov", false}}},
      {"scheduler",
       {{"name", "none"},
        {"interval", "epoch"},
        {"frequency", 1},
        {"step_size", 10},
        {"gamma", 0.1},
        {"milestones", json::array()},
        {"t_max", 10},
        {"eta_min", 0.0},
        {"max_lr", 0.0},
        {"total_steps", 0},
        {"pct_start", 0.3},
        {"warmup", 0},
        {"warmup_start_factor", 0.01}}},
      {"data",
       {{"root", "./shoal-data"},
        {"dataset", "fashion-mnist"},
        {"train_table", "fashion-mnist-train"},
        {"val_table", ""},
        {"test_table", "fashion-mnist-test"},
        {"train_where", ""},
        {"val_where", ""},
        {"batch_size", 128},
        {"eval_batch_size", 512},
        {"threads", 2},
        {"prefetch", 0},
        {"shuffle_buffer", 1024},
        {"cache", false},
        {"flip", false},
        {"random_resized_crop", 0},
        {"resize", 0},
        {"center_crop", 0},
        {"channels", 0},
        {"rank", 0},
        {"world_size", 1}}},
      {"trainer",
       {{"max_epochs", 10},
        {"min_epochs", 0},
        {"max_steps", -1},
        {"max_time_s", 0.0},
        {"val_check_interval", 1.0},
        {"check_val_every_n_epoch", 1},
        {"num_sanity_val_steps", 2},
        {"limit_train_batches", 1.0},
        {"limit_val_batches", 1.0},
        {"limit_test_batches", 1.0},
        {"accumulate_grad_batches", 1},
        {"gradient_clip_val", 0.0},
        {"gradient_clip_algorithm", "norm"},
        {"log_every_n_steps", 50},
        {"enable_progress_bar", true},
        {"seed", 0},
        {"deterministic", false},
        {"fast_dev_run", false},
        {"default_root_dir", "./shoal-runs"},
        {"ckpt_path", ""},
        {"threads", 0}}},
      {"dist",
       {{"backend", "auto"},
        {"timeout_s", 300.0},
        {"bucket_mb", 25.0},
        {"compression", "none"},
        {"scale_lr", "none"},
        {"warmup_epochs", 0.0}}},
      {"tracking",
       {{"enabled", true},
        {"uri", ""},
        {"token_file", ""},
        {"spool_dir", ""},
        {"experiment", "Default"},
        {"run_name", ""},
        {"register_model", ""}}},
      {"callbacks",
       {{"early_stopping",
         {{"enabled", true},
          {"monitor", "val_loss"},
          {"min_delta", 0.0},
          {"patience", 3},
          {"mode", "min"},
          {"strict", true},
          {"check_finite", true},
          {"stopping_threshold", nullptr},
          {"divergence_threshold", nullptr},
          {"check_on_train_epoch_end", false}}},
        {"lr_monitor", {{"enabled", true}, {"logging_interval", "epoch"}}},
        {"model_checkpoint",
         {{"enabled", true},
          {"dirpath", ""},
          {"filename", "{epoch}-{val_loss:.4f}"},
          {"monitor", "val_loss"},
          {"mode", "min"},
          {"save_top_k", 1},
          {"save_last", true},
          {"every_n_epochs", 1},
          {"every_n_train_steps", 0},
          {"save_weights_only", false}}}}},
  };
}

void Merge(json& base, const json& over, const std::string& path) {
  if (!over.is_object()) throw InvalidError("config " + (path.empty() ? "root" : "'" + path + "'") + " must be a mapping");
  for (const auto& [key, value] : over.items()) {
    std::string at = path.empty() ? key : path + "." + key;
    if (!base.contains(key)) {
      std::string known;
      for (const auto& [k, v] : base.items()) known += (known.empty() ? "" : ", ") + k;
      throw InvalidError("unknown config key '" + at + "' (known here: " + known + ")");
    }
    if (base[key].is_object()) {
      Merge(base[key], value, at);
    } else if (value.is_null() && base[key].is_string()) {
      base[key] = "";  // "key:" with no value, for a text setting, is empty text
    } else {
      base[key] = value;
    }
  }
}

template <typename T>
T Value(const json& section, const char* key, const std::string& where) {
  try {
    return section.at(key).get<T>();
  } catch (const json::exception&) {
    throw InvalidError("config '" + where + "." + key + "' has the wrong type: " + section.at(key).dump());
  }
}

class Classifier : public NetworkModule {
 public:
  Classifier(std::shared_ptr<models::Network> net, json optimizer, json scheduler)
      : NetworkModule(std::move(net)), optimizer_(std::move(optimizer)), scheduler_(std::move(scheduler)) {}
  std::unique_ptr<torch::optim::Optimizer> configure_optimizers() override {
    const std::string name = Value<std::string>(optimizer_, "name", "optimizer");
    const double lr = Value<double>(optimizer_, "lr", "optimizer");
    const double decay = Value<double>(optimizer_, "weight_decay", "optimizer");
    if (name == "adam") return std::make_unique<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(lr).weight_decay(decay));
    if (name == "adamw") return std::make_unique<torch::optim::AdamW>(parameters(), torch::optim::AdamWOptions(lr).weight_decay(decay));
    if (name == "sgd") {
      return std::make_unique<torch::optim::SGD>(
          parameters(), torch::optim::SGDOptions(lr)
                            .momentum(Value<double>(optimizer_, "momentum", "optimizer"))
                            .nesterov(Value<bool>(optimizer_, "nesterov", "optimizer"))
                            .weight_decay(decay));
    }
    throw InvalidError("unknown optimizer '" + name + "' (known: adam, adamw, sgd)");
  }
  std::optional<ScheduleOptions> configure_scheduler() override {
    const json& s = scheduler_;
    ScheduleOptions o;
    o.name = Value<std::string>(s, "name", "scheduler");
    o.interval = Value<std::string>(s, "interval", "scheduler");
    o.frequency = Value<int>(s, "frequency", "scheduler");
    o.step_size = Value<int64_t>(s, "step_size", "scheduler");
    o.gamma = Value<double>(s, "gamma", "scheduler");
    o.milestones = Value<std::vector<int64_t>>(s, "milestones", "scheduler");
    o.t_max = Value<int64_t>(s, "t_max", "scheduler");
    o.eta_min = Value<double>(s, "eta_min", "scheduler");
    o.max_lr = Value<double>(s, "max_lr", "scheduler");
    o.total_steps = Value<int64_t>(s, "total_steps", "scheduler");
    o.pct_start = Value<double>(s, "pct_start", "scheduler");
    o.warmup = Value<int64_t>(s, "warmup", "scheduler");
    o.warmup_start_factor = Value<double>(s, "warmup_start_factor", "scheduler");
    ValidateSchedule(o);
    return o;
  }

 private:
  json optimizer_, scheduler_;
};

// Loaders over the config's tables; prepare_data ingests the named data set when they are missing.
class TableData : public DataModule {
 public:
  explicit TableData(json config) : c_(std::move(config)) {}

  std::string Table(const char* key) const {
    std::string name = Value<std::string>(c_, key, "data");
    if (name.empty()) return "";
    std::filesystem::path p(name);
    return p.is_absolute() ? name : (std::filesystem::path(Value<std::string>(c_, "root", "data")) / p).string();
  }

  void prepare_data() override {
    const std::string dataset = Value<std::string>(c_, "dataset", "data");
    if (dataset.empty()) return;
    if (dataset != "fashion-mnist") throw InvalidError("unknown data set '" + dataset + "' (known: fashion-mnist)");
    for (auto [key, split] : {std::pair<const char*, const char*>{"train_table", "train"}, {"test_table", "test"}}) {
      std::string table = Table(key);
      if (table.empty() || std::filesystem::exists(std::filesystem::path(table) / "_delta_log")) continue;
      std::cerr << "shoal train: prepare_data: ingesting Fashion-MNIST " << split << " into " << table << "\n";
      data::IngestOptions options;
      options.out = table;
      data::IngestFashionMnist(split, options);
    }
  }

  data::LoaderOptions Loader(const std::string& table, const std::string& where, bool train) const {
    data::LoaderOptions o;
    o.table = table;
    o.where = where;
    o.batch_size = Value<int64_t>(c_, train ? "batch_size" : "eval_batch_size", "data");
    o.threads = Value<int>(c_, "threads", "data");
    o.prefetch = Value<int>(c_, "prefetch", "data");
    o.shuffle = train;
    o.shuffle_buffer = Value<int64_t>(c_, "shuffle_buffer", "data");
    o.rank = Value<int>(c_, "rank", "data");
    o.world_size = Value<int>(c_, "world_size", "data");
    o.transform.channels = Value<int>(c_, "channels", "data");
    o.transform.resize = Value<int>(c_, "resize", "data");
    o.transform.center_crop = Value<int>(c_, "center_crop", "data");
    if (train) {
      o.transform.horizontal_flip = Value<bool>(c_, "flip", "data");
      o.transform.random_resized_crop = Value<int>(c_, "random_resized_crop", "data");
      o.cache = Value<bool>(c_, "cache", "data");  // the train loader lives across epochs
    }
    return o;
  }

  data::LoaderOptions train_loader() override {
    data::LoaderOptions o = Loader(Table("train_table"), Value<std::string>(c_, "train_where", "data"), true);
    o.seed = seed;
    return o;
  }
  std::optional<data::LoaderOptions> val_loader() override {
    std::string where = Value<std::string>(c_, "val_where", "data");
    std::string table = Table("val_table");
    if (table.empty() && where.empty()) return std::nullopt;
    return Loader(table.empty() ? Table("train_table") : table, where, false);
  }
  std::optional<data::LoaderOptions> test_loader() override {
    std::string table = Table("test_table");
    if (table.empty()) return std::nullopt;
    return Loader(table, "", false);
  }

  uint64_t seed = 0;

 private:
  json c_;
};

struct Built {
  std::shared_ptr<track::Tracker> tracker;  // rank 0 of a tracked run, else null
  std::shared_ptr<Classifier> module;
  std::unique_ptr<TableData> data;
  std::unique_ptr<Trainer> trainer;
  json config;
};

// The tracking store: tracking.uri, else MLFLOW_TRACKING_URI, else the data root.
std::string TrackingUri(const json& c) {
  std::string uri = Value<std::string>(c["tracking"], "uri", "tracking");
  if (!uri.empty()) return uri;
  if (const char* env = std::getenv("MLFLOW_TRACKING_URI"); env && *env) return env;
  return Value<std::string>(c["data"], "root", "data");
}

// The tracking client: the local store, or an MLflow-compatible server (http/https) with the
// token in tracking.token_file (else MLFLOW_TRACKING_TOKEN), spooling to tracking.spool_dir
// (default <data root>/tracking-spool) while the server is unreachable.
std::shared_ptr<track::Tracker> OpenTracker(const json& c) {
  const json& tr = c["tracking"];
  const std::string uri = TrackingUri(c);
  track::BackendOptions bo;
  const std::string token_file = Value<std::string>(tr, "token_file", "tracking");
  if (!token_file.empty()) {
    const std::vector<uint8_t> bytes = ReadFile(token_file);
    bo.token.assign(bytes.begin(), bytes.end());
    while (!bo.token.empty() && std::isspace(static_cast<unsigned char>(bo.token.back()))) bo.token.pop_back();
  }
  track::TrackerOptions to;
  const bool remote = uri.rfind("http://", 0) == 0 || uri.rfind("https://", 0) == 0;
  to.spool_dir = Value<std::string>(tr, "spool_dir", "tracking");
  if (to.spool_dir.empty() && remote) to.spool_dir = (std::filesystem::path(Value<std::string>(c["data"], "root", "data")) / "tracking-spool").string();
  return std::make_shared<track::Tracker>(track::OpenBackend(uri, bo), to);
}

// The model's input shape comes from the train table's description (through a loader). With
// `distributed`, a process started by a launcher (dist/cluster.h) joins its process group.
Built Build(const json& raw, bool distributed = false, bool tracked = false) {
  Built b;
  b.config = ResolveConfig(raw);
  const json& c = b.config;
  const json& t = c["trainer"];
  const json& d = c["dist"];
  std::shared_ptr<dist::Group> group;
  dist::ClusterEnv env;
  if (distributed) env = dist::DetectClusterEnv();
  if (env.distributed()) {
    group = dist::Group::Create(env, {Value<std::string>(d, "backend", "dist"), Value<double>(d, "timeout_s", "dist")});
  }
  if (int threads = Value<int>(t, "threads", "trainer"); threads > 0) {
    torch::set_num_threads(threads);
  } else if (env.local_world_size > 1) {
    // The processes on a machine share its cores.
    torch::set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / env.local_world_size));
  }
  b.data = std::make_unique<TableData>(c["data"]);
  b.data->seed = Value<uint64_t>(t, "seed", "trainer");
  b.data->prepare_data();
  data::LoaderOptions probe = b.data->train_loader();
  data::Loader shape_probe(probe);
  const std::vector<int>& shape = shape_probe.image_shape();
  if (shape[1] != shape[2]) throw InvalidError("the model zoo takes square images, the loader gives " + std::to_string(shape[1]) + "x" + std::to_string(shape[2]));
  models::ModelOptions m;
  m.name = Value<std::string>(c["model"], "name", "model");
  m.num_classes = Value<int>(c["model"], "num_classes", "model");
  m.dropout = Value<double>(c["model"], "dropout", "model");
  m.hidden = Value<std::vector<int>>(c["model"], "hidden", "model");
  m.stem = Value<std::string>(c["model"], "stem", "model");
  m.width_mult = Value<double>(c["model"], "width_mult", "model");
  m.in_channels = shape[0];
  m.image_size = shape[1];
  torch::manual_seed(Value<uint64_t>(t, "seed", "trainer"));
  b.module = std::make_shared<Classifier>(models::CreateModel(m), c["optimizer"], c["scheduler"]);

  TrainerOptions o;
  o.max_epochs = Value<int64_t>(t, "max_epochs", "trainer");
  o.min_epochs = Value<int64_t>(t, "min_epochs", "trainer");
  o.max_steps = Value<int64_t>(t, "max_steps", "trainer");
  o.max_time_s = Value<double>(t, "max_time_s", "trainer");
  o.val_check_interval = Value<double>(t, "val_check_interval", "trainer");
  o.check_val_every_n_epoch = Value<int>(t, "check_val_every_n_epoch", "trainer");
  o.num_sanity_val_steps = Value<int>(t, "num_sanity_val_steps", "trainer");
  o.limit_train_batches = Value<double>(t, "limit_train_batches", "trainer");
  o.limit_val_batches = Value<double>(t, "limit_val_batches", "trainer");
  o.limit_test_batches = Value<double>(t, "limit_test_batches", "trainer");
  o.accumulate_grad_batches = Value<int>(t, "accumulate_grad_batches", "trainer");
  o.gradient_clip_val = Value<double>(t, "gradient_clip_val", "trainer");
  o.gradient_clip_algorithm = Value<std::string>(t, "gradient_clip_algorithm", "trainer");
  o.log_every_n_steps = std::max(1, Value<int>(t, "log_every_n_steps", "trainer"));
  o.enable_progress_bar = Value<bool>(t, "enable_progress_bar", "trainer");
  o.seed = Value<uint64_t>(t, "seed", "trainer");
  o.deterministic = Value<bool>(t, "deterministic", "trainer");
  o.fast_dev_run = Value<bool>(t, "fast_dev_run", "trainer");
  o.default_root_dir = Value<std::string>(t, "default_root_dir", "trainer");
  o.group = group;
  o.grad_bucket_bytes = static_cast<int64_t>(Value<double>(d, "bucket_mb", "dist") * 1e6);
  o.grad_compression = Value<std::string>(d, "compression", "dist");
  o.scale_lr = Value<std::string>(d, "scale_lr", "dist");
  o.scale_lr_warmup_epochs = Value<double>(d, "warmup_epochs", "dist");
  for (const auto& [section, values] : c.items()) {
    for (const auto& [key, value] : values.items()) {
      o.hyper_parameters[section + "." + key] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  }
  std::vector<std::shared_ptr<Callback>> callbacks;
  const json& tr = c["tracking"];
  if (tracked && Value<bool>(tr, "enabled", "tracking") && env.rank == 0) {
    b.tracker = OpenTracker(c);
    TrackingOptions k;
    k.experiment = Value<std::string>(tr, "experiment", "tracking");
    k.run_name = Value<std::string>(tr, "run_name", "tracking");
    // Lineage: the tables read, at the Delta versions read.
    for (const char* key : {"train_table", "val_table", "test_table"}) {
      std::string table = b.data->Table(key);
      if (table.empty() || !std::filesystem::exists(std::filesystem::path(table) / "_delta_log")) continue;
      std::string name = std::string(key).substr(0, std::string(key).find('_'));
      k.tags["shoal.input." + name + "_table"] = std::filesystem::absolute(table).string();
      k.tags["shoal.input." + name + "_table_version"] = std::to_string(delta::LoadSnapshot(table).version);
    }
    callbacks.push_back(std::make_shared<TrackingCallback>(b.tracker, k));
  }
  const json& es = c["callbacks"]["early_stopping"];
  if (Value<bool>(es, "enabled", "callbacks.early_stopping")) {
    EarlyStoppingOptions e;
    e.monitor = Value<std::string>(es, "monitor", "callbacks.early_stopping");
    e.min_delta = Value<double>(es, "min_delta", "callbacks.early_stopping");
    e.patience = Value<int>(es, "patience", "callbacks.early_stopping");
    e.mode = Value<std::string>(es, "mode", "callbacks.early_stopping");
    e.strict = Value<bool>(es, "strict", "callbacks.early_stopping");
    e.check_finite = Value<bool>(es, "check_finite", "callbacks.early_stopping");
    if (!es["stopping_threshold"].is_null()) e.stopping_threshold = Value<double>(es, "stopping_threshold", "callbacks.early_stopping");
    if (!es["divergence_threshold"].is_null()) e.divergence_threshold = Value<double>(es, "divergence_threshold", "callbacks.early_stopping");
    e.check_on_train_epoch_end = Value<bool>(es, "check_on_train_epoch_end", "callbacks.early_stopping");
    callbacks.push_back(std::make_shared<EarlyStopping>(e));
  }
  const json& lr = c["callbacks"]["lr_monitor"];
  if (Value<bool>(lr, "enabled", "callbacks.lr_monitor")) {
    callbacks.push_back(std::make_shared<LearningRateMonitor>(Value<std::string>(lr, "logging_interval", "callbacks.lr_monitor")));
  }
  const json& mc = c["callbacks"]["model_checkpoint"];
  if (Value<bool>(mc, "enabled", "callbacks.model_checkpoint")) {
    ModelCheckpointOptions k;
    k.dirpath = Value<std::string>(mc, "dirpath", "callbacks.model_checkpoint");
    k.filename = Value<std::string>(mc, "filename", "callbacks.model_checkpoint");
    k.monitor = Value<std::string>(mc, "monitor", "callbacks.model_checkpoint");
    k.mode = Value<std::string>(mc, "mode", "callbacks.model_checkpoint");
    k.save_top_k = Value<int>(mc, "save_top_k", "callbacks.model_checkpoint");
    k.save_last = Value<bool>(mc, "save_last", "callbacks.model_checkpoint");
    k.every_n_epochs = Value<int>(mc, "every_n_epochs", "callbacks.model_checkpoint");
    k.every_n_train_steps = Value<int>(mc, "every_n_train_steps", "callbacks.model_checkpoint");
    k.save_weights_only = Value<bool>(mc, "save_weights_only", "callbacks.model_checkpoint");
    callbacks.push_back(std::make_shared<ModelCheckpoint>(k));
  }
  b.trainer = std::make_unique<Trainer>(o, callbacks);
  return b;
}

double Round(double v, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

}  // namespace

json ResolveConfig(const json& config) {
  json out = Defaults();
  if (!config.is_null()) Merge(out, config, "");
  return out;
}

json RunTrain(const json& config) {
  auto start = std::chrono::steady_clock::now();
  Built b = Build(config, /*distributed=*/true, /*tracked=*/true);
  std::string ckpt_path = Value<std::string>(b.config["trainer"], "ckpt_path", "trainer");
  // A job the launcher restarted resumes from the last checkpoint this job wrote.
  const dist::ClusterEnv env = dist::DetectClusterEnv();
  if (ckpt_path.empty() && env.restart_count > 0) {
    std::string last = b.trainer->last_checkpoint_path();
    std::error_code ec;
    long job_start = 0;
    if (const char* s = std::getenv("SHOAL_JOB_START")) job_start = std::atol(s);
    if (!last.empty() && std::filesystem::exists(last, ec)) {
      auto written = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::file_clock::to_sys(std::filesystem::last_write_time(last)).time_since_epoch())
                         .count();
      if (written >= job_start) {
        ckpt_path = last;
        if (env.rank == 0) std::cerr << "shoal train: restart " << env.restart_count << ": resuming from " << last << "\n";
      }
    }
    if (ckpt_path.empty() && env.rank == 0) {
      std::cerr << "shoal train: restart " << env.restart_count << ": no checkpoint of this job yet; starting over\n";
    }
  }
  b.trainer->fit(*b.module, *b.data, ckpt_path);
  std::string best = b.trainer->best_model_path();
  std::string last = b.trainer->last_model_path();
  json out = json::object();
  for (const auto& [k, v] : b.trainer->callback_metrics()) out[k] = Round(v, 6);
  // Test the best checkpoint when there is one, else the final weights.
  Metrics test = b.trainer->test(*b.module, *b.data, best);
  for (const auto& [k, v] : test) out[k] = Round(v, 6);
  out["epochs"] = b.trainer->current_epoch();
  out["global_step"] = b.trainer->global_step();
  out["checkpoint"] = !best.empty() ? best : last;
  out["last_checkpoint"] = last;
  out["seconds"] = Round(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3);
  if (b.tracker && !b.tracker->run_id().empty()) {
    // The test metrics, the model, and its registration close the tracking run.
    for (const auto& [k, v] : test) b.tracker->LogMetric(k, v, b.trainer->global_step());
    out["run_id"] = b.tracker->run_id();
    std::string model = !best.empty() ? best : last;
    if (!model.empty() && std::filesystem::exists(model)) {
      std::string stored = b.tracker->LogArtifact(model, "model");
      const std::string name = Value<std::string>(b.config["tracking"], "register_model", "tracking");
      if (!name.empty()) {
        track::ModelVersion v = b.tracker->RegisterModel(name, stored);
        out["registered_model"] = name;
        out["model_version"] = v.version;
      }
    }
    b.tracker->EndRun("FINISHED");
  }
  out["world_size"] = b.trainer->world_size();
  out["weights_crc32"] = b.trainer->weights_crc32();  // the same on every rank (checked)
  if (!b.trainer->is_global_zero()) return nullptr;  // rank 0 reports
  return out;
}

json RunTest(const json& config, const std::string& ckpt) {
  Built b = Build(config);
  Metrics test = b.trainer->test(*b.module, *b.data, ckpt);
  json out = json::object();
  for (const auto& [k, v] : test) out[k] = Round(v, 6);
  out["checkpoint"] = ckpt;
  return out;
}

json RunPredict(const json& config, const std::string& ckpt, const std::string& table, const std::string& out_table) {
  json c = config.is_null() ? json::object() : config;
  c["data"]["test_table"] = table;
  if (std::filesystem::exists(std::filesystem::path(out_table) / "_delta_log")) {
    throw InvalidError("output table '" + out_table + "' exists already; predictions go to a new table");
  }
  Built b = Build(c);
  b.trainer->test(*b.module, *b.data, ckpt);  // loads the weights, and checks the checkpoint fits the model
  std::vector<std::pair<int64_t, int64_t>> predictions = b.trainer->predict(*b.module, *b.data);
  using parquet::PhysicalType;
  using parquet::WriteField;
  parquet::Schema schema = parquet::Schema::FromElements(parquet::ToSchemaElements({
      WriteField::Primitive("id", PhysicalType::kInt64, false),
      WriteField::Primitive("prediction", PhysicalType::kInt64, false),
  }));
  parquet::RecordBatch batch;
  batch.columns.resize(2);
  for (const auto& [id, predicted] : predictions) {
    AppendBytes(batch.columns[0].data, &id, 8);
    AppendBytes(batch.columns[1].data, &predicted, 8);
  }
  batch.num_rows = static_cast<int64_t>(predictions.size());
  for (auto& col : batch.columns) col.length = batch.num_rows;
  delta::AppendOptions append;
  append.configuration["shoal.predictions"] = json{{"checkpoint", ckpt}, {"table", table}}.dump();
  delta::AppendResult r = delta::AppendToTable(out_table, schema, {batch}, append);
  return {{"table", out_table}, {"rows", r.rows}, {"version", r.version}, {"checkpoint", ckpt}};
}

}  // namespace shoal::train
