#include "train/trainer.h"

#include <ATen/core/ivalue.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "dist/grad_sync.h"
#include "dist/process_group.h"
#include "util/crc32.h"
#include "util/error.h"
#include "util/file.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::train {

// ---- Module ----

void Module::log(const std::string& name, double value, bool on_step, bool on_epoch, bool prog_bar, int64_t count) {
  if (on_step) logged_.step_values[name] = value;
  if (on_epoch) {
    auto& [sum, n] = logged_.epoch_sums[name];
    sum += value * static_cast<double>(count);
    n += count;
  }
  if (prog_bar && std::find(logged_.prog_bar.begin(), logged_.prog_bar.end(), name) == logged_.prog_bar.end()) {
    logged_.prog_bar.push_back(name);
  }
}

Module::Logged Module::TakeLogged() {
  Logged out = std::move(logged_);
  logged_ = Logged{};
  return out;
}

void Module::ClassificationStep(const TensorBatch& batch, const std::string& stage, at::Tensor* loss_out) {
  if (!batch.labels.defined()) throw InvalidError("the " + stage + " loader gives no labels to classify against");
  at::Tensor logits = forward(batch.images);
  at::Tensor loss = torch::nn::functional::cross_entropy(logits, batch.labels);
  const int64_t n = batch.images.size(0);
  const double accuracy = logits.argmax(1).eq(batch.labels).to(torch::kFloat64).mean().item<double>();
  const bool train = stage == "train";
  log(stage + "_loss", loss.item<double>(), train, true, true, n);
  log(stage + "_acc", accuracy, train, true, true, n);
  if (loss_out) *loss_out = loss;
}

at::Tensor Module::training_step(const TensorBatch& batch, int64_t) {
  at::Tensor loss;
  ClassificationStep(batch, "train", &loss);
  return loss;
}

void Module::validation_step(const TensorBatch& batch, int64_t) { ClassificationStep(batch, "val", nullptr); }

void Module::test_step(const TensorBatch& batch, int64_t) { ClassificationStep(batch, "test", nullptr); }

at::Tensor Module::predict_step(const TensorBatch& batch, int64_t) { return forward(batch.images).argmax(1); }

// ---- Trainer ----

namespace {

std::string Fixed(double v, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << v;
  return out.str();
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

using Dict = c10::Dict<c10::IValue, c10::IValue>;

Dict NewDict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }

// Adam's and AdamW's per-parameter state, as PyTorch names it (its "step" is a tensor).
template <typename State>
void SaveAdam(const State& state, Dict& out) {
  out.insert("step", torch::tensor(static_cast<double>(state.step())));
  out.insert("exp_avg", state.exp_avg());
  out.insert("exp_avg_sq", state.exp_avg_sq());
  if (state.max_exp_avg_sq().defined()) out.insert("max_exp_avg_sq", state.max_exp_avg_sq());
}

c10::IValue Get(const Dict& dict, const std::string& key, const std::string& where);

template <typename State, typename Check>
std::unique_ptr<State> RestoreAdam(const Dict& saved, const std::string& where, const Check& check) {
  auto state = std::make_unique<State>();
  state->step(static_cast<int64_t>(Get(saved, "step", where).toTensor().template item<double>()));
  state->exp_avg(check(Get(saved, "exp_avg", where).toTensor()));
  state->exp_avg_sq(check(Get(saved, "exp_avg_sq", where).toTensor()));
  if (saved.contains("max_exp_avg_sq")) state->max_exp_avg_sq(check(Get(saved, "max_exp_avg_sq", where).toTensor()));
  return state;
}

// The optimizer's state as PyTorch's optimizer.state_dict() lays it out: "state" by parameter
// index, "param_groups" with their hyperparameters and parameter indices.
Dict OptimizerState(torch::optim::Optimizer& optimizer) {
  Dict state(c10::IntType::get(), c10::AnyType::get());
  c10::List<c10::IValue> groups(c10::AnyType::get());
  int64_t index = 0;
  for (auto& group : optimizer.param_groups()) {
    Dict g = NewDict();
    c10::List<int64_t> params;
    auto* adam = dynamic_cast<torch::optim::AdamOptions*>(&group.options());
    auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&group.options());
    auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&group.options());
    g.insert("lr", group.options().get_lr());
    if (adam) {
      g.insert("betas", c10::ivalue::Tuple::create({std::get<0>(adam->betas()), std::get<1>(adam->betas())}));
      g.insert("eps", adam->eps());
      g.insert("weight_decay", adam->weight_decay());
      g.insert("amsgrad", adam->amsgrad());
    } else if (adamw) {
      g.insert("betas", c10::ivalue::Tuple::create({std::get<0>(adamw->betas()), std::get<1>(adamw->betas())}));
      g.insert("eps", adamw->eps());
      g.insert("weight_decay", adamw->weight_decay());
      g.insert("amsgrad", adamw->amsgrad());
    } else if (sgd) {
      g.insert("momentum", sgd->momentum());
      g.insert("dampening", sgd->dampening());
      g.insert("weight_decay", sgd->weight_decay());
      g.insert("nesterov", sgd->nesterov());
    }
    for (auto& p : group.params()) {
      params.push_back(index);
      auto key = c10::guts::to_string(p.unsafeGetTensorImpl());
      auto it = optimizer.state().find(key);
      if (it != optimizer.state().end()) {
        Dict s = NewDict();
        if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
          SaveAdam(*a, s);
        } else if (auto* w = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
          SaveAdam(*w, s);
        } else if (auto* m = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
          if (m->momentum_buffer().defined()) s.insert("momentum_buffer", m->momentum_buffer());
        }
        state.insert(index, s);
      }
      ++index;
    }
    g.insert("params", params);
    groups.push_back(g);
  }
  Dict out = NewDict();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

c10::IValue Get(const Dict& dict, const std::string& key, const std::string& where) {
  auto it = dict.find(key);
  if (it == dict.end()) throw InvalidError(where + " has no '" + key + "'");
  return it->value();
}

void RestoreOptimizer(torch::optim::Optimizer& optimizer, const Dict& saved, const std::string& where) {
  auto state = Get(saved, "state", where).toGenericDict();
  auto groups = Get(saved, "param_groups", where).toList();
  if (groups.size() != optimizer.param_groups().size()) {
    throw InvalidError(where + " holds " + std::to_string(groups.size()) + " parameter groups, the optimizer has " +
                       std::to_string(optimizer.param_groups().size()));
  }
  int64_t index = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    auto& group = optimizer.param_groups()[gi];
    Dict g = groups.get(gi).toGenericDict();
    group.options().set_lr(Get(g, "lr", where).toDouble());
    for (auto& p : group.params()) {
      auto it = state.find(c10::IValue(index));
      if (it != state.end()) {
        Dict s = it->value().toGenericDict();
        auto key = c10::guts::to_string(p.unsafeGetTensorImpl());
        auto check = [&](const at::Tensor& t) {
          if (!t.sizes().equals(p.sizes())) {
            throw InvalidError(where + ": optimizer state of parameter " + std::to_string(index) + " has shape " +
                               c10::str(t.sizes()) + ", the parameter " + c10::str(p.sizes()));
          }
          return t;
        };
        if (dynamic_cast<torch::optim::Adam*>(&optimizer)) {
          optimizer.state()[key] = RestoreAdam<torch::optim::AdamParamState>(s, where, check);
        } else if (dynamic_cast<torch::optim::AdamW*>(&optimizer)) {
          optimizer.state()[key] = RestoreAdam<torch::optim::AdamWParamState>(s, where, check);
        } else if (dynamic_cast<torch::optim::SGD*>(&optimizer)) {
          auto st = std::make_unique<torch::optim::SGDParamState>();
          if (s.contains("momentum_buffer")) st->momentum_buffer(check(Get(s, "momentum_buffer", where).toTensor()));
          optimizer.state()[key] = std::move(st);
        }
      }
      ++index;
    }
  }
}

}  // namespace

Trainer::Trainer(TrainerOptions options, std::vector<std::shared_ptr<Callback>> callbacks)
    : options_(std::move(options)), callbacks_(std::move(callbacks)) {
  if (options_.max_epochs <= 0 && options_.max_steps <= 0) throw InvalidError("trainer max_epochs must be positive");
  if (options_.accumulate_grad_batches <= 0) throw InvalidError("trainer accumulate_grad_batches must be positive");
  if (options_.gradient_clip_algorithm != "norm" && options_.gradient_clip_algorithm != "value") {
    throw InvalidError("trainer gradient_clip_algorithm must be norm or value");
  }
  if (options_.scale_lr != "none" && options_.scale_lr != "linear" && options_.scale_lr != "sqrt") {
    throw InvalidError("scale_lr must be linear, sqrt or none, not '" + options_.scale_lr + "'");
  }
  if (options_.scale_lr_warmup_epochs < 0) throw InvalidError("the learning-rate warmup epochs must not be negative");
  if (options_.fast_dev_run) {
    options_.max_epochs = 1;
    options_.limit_train_batches = options_.limit_val_batches = options_.limit_test_batches = 1.0001;  // one batch
    options_.num_sanity_val_steps = 0;
  }
}

Trainer::~Trainer() = default;

bool Trainer::is_global_zero() const { return !options_.group || options_.group->rank() == 0; }

int Trainer::world_size() const { return options_.group ? options_.group->size() : 1; }

data::LoaderOptions Trainer::Shard(data::LoaderOptions o, bool evaluation) const {
  if (!options_.group) return o;
  o.rank = options_.group->rank();
  o.world_size = options_.group->size();
  // Training: equal batch counts on every rank (padding). Evaluation: each row once.
  if (evaluation) o.remainder = data::Remainder::kSplit;
  return o;
}

void Trainer::ReduceSums(std::map<std::string, std::pair<double, int64_t>>& sums, const std::string& what) {
  if (!options_.group || world_size() == 1) return;
  std::string names;
  for (const auto& [k, v] : sums) names += k + "\n";
  std::vector<std::string> all = options_.group->AllGather(names, what + ": comparing metric names");
  for (int r = 1; r < world_size(); ++r) {
    if (all[r] != all[0]) {
      throw InvalidError(what + ": rank " + std::to_string(r) + " logged other metrics than rank 0 (rank 0: " + all[0] +
                         "rank " + std::to_string(r) + ": " + all[r] + ")");
    }
  }
  if (sums.empty()) return;
  at::Tensor t = torch::empty({static_cast<int64_t>(sums.size() * 2)}, torch::kFloat64);
  double* p = t.data_ptr<double>();
  for (const auto& [k, v] : sums) {
    *p++ = v.first;
    *p++ = static_cast<double>(v.second);
  }
  options_.group->AllReduce(t, dist::Reduce::kSum, what);
  p = t.data_ptr<double>();
  for (auto& [k, v] : sums) {
    v.first = *p++;
    v.second = static_cast<int64_t>(std::llround(*p++));
  }
}

void Trainer::SyncStep(Metrics& step_values) {
  if (!options_.group || world_size() == 1) return;
  at::Tensor t = torch::empty({static_cast<int64_t>(step_values.size() + 1)}, torch::kFloat64);
  double* p = t.data_ptr<double>();
  *p++ = should_stop ? 1.0 : 0.0;
  for (const auto& [k, v] : step_values) *p++ = v;
  options_.group->AllReduce(t, dist::Reduce::kSum, "synchronising step " + std::to_string(global_step_));
  p = t.data_ptr<double>();
  should_stop = *p++ > 0;
  for (auto& [k, v] : step_values) v = *p++ / world_size();
}

double Trainer::LrScale() const {
  const double n = world_size();
  const double k = options_.scale_lr == "linear" ? n : options_.scale_lr == "sqrt" ? std::sqrt(n) : 1.0;
  if (k == 1.0 || options_.scale_lr_warmup_epochs <= 0 || steps_per_epoch_ <= 0) return k;
  const double done = static_cast<double>(global_step_) / (options_.scale_lr_warmup_epochs * static_cast<double>(steps_per_epoch_));
  return 1.0 + (k - 1.0) * std::min(1.0, done);
}

std::string Trainer::last_checkpoint_path() const {
  for (const auto& c : callbacks_) {
    if (auto* m = dynamic_cast<ModelCheckpoint*>(c.get())) {
      std::string dir = m->dirpath().empty() ? (std::filesystem::path(options_.default_root_dir) / "checkpoints").string()
                                             : m->dirpath();
      return (std::filesystem::path(dir) / "last.ckpt").string();
    }
  }
  return "";
}

// On a terminal, step lines redraw one line in place with a bar; elsewhere (logs, CI) every
// line is kept. Only rank 0 reports.
void Trainer::Progress(const std::string& line, double done) const {
  if (!options_.enable_progress_bar || !is_global_zero()) return;
  static const bool tty = ::isatty(2) != 0;
  if (tty && done >= 0) {
    const int width = 20, filled = static_cast<int>(std::lround(std::clamp(done, 0.0, 1.0) * width));
    std::cerr << "\r\033[K[" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << line << std::flush;
    transient_ = true;
    return;
  }
  ClearProgress();
  std::cerr << "shoal train: " << line << std::endl;
}

void Trainer::ClearProgress() const {
  if (transient_) std::cerr << "\r\033[K" << std::flush;
  transient_ = false;
}

int64_t Trainer::BatchLimit(double limit, int64_t available) const {
  if (limit <= 0) return 0;
  if (options_.fast_dev_run) return std::min<int64_t>(1, available);
  if (limit <= 1.0) return std::max<int64_t>(1, static_cast<int64_t>(std::floor(limit * static_cast<double>(available))));
  return std::min<int64_t>(available, static_cast<int64_t>(limit));
}

std::string Trainer::best_model_path() const {
  for (const auto& c : callbacks_) {
    if (auto* m = dynamic_cast<ModelCheckpoint*>(c.get())) return m->best_model_path();
  }
  return "";
}

std::string Trainer::last_model_path() const {
  for (const auto& c : callbacks_) {
    if (auto* m = dynamic_cast<ModelCheckpoint*>(c.get())) return m->last_model_path();
  }
  return "";
}

std::string Trainer::ResolveCheckpoint(const std::string& ckpt_path) const {
  if (ckpt_path == "last" || ckpt_path == "best") {
    std::string path = ckpt_path == "last" ? last_model_path() : best_model_path();
    // Before any run in this process: the checkpoint callback's directory.
    if (path.empty() && ckpt_path == "last") path = last_checkpoint_path();
    if (path.empty() || !std::filesystem::exists(path)) {
      throw NotFoundError("no '" + ckpt_path + "' checkpoint to resume from" + (path.empty() ? "" : " ('" + path + "')"));
    }
    return path;
  }
  return ckpt_path;
}

void Trainer::SaveCheckpoint(const std::string& path, bool weights_only) {
  if (!module_) throw InvalidError("no module to save: fit() has not started");
  if (!is_global_zero()) return;  // every rank holds the same state; rank 0 writes it
  Dict ckpt = NewDict();
  c10::Dict<std::string, at::Tensor> state_dict;
  for (const auto& p : module_->named_parameters()) state_dict.insert(p.key(), p.value().detach());
  for (const auto& b : module_->named_buffers()) state_dict.insert(b.key(), b.value().detach());
  ckpt.insert("state_dict", state_dict);
  // An epoch whose batches are all done resumes at the next epoch's start.
  const int64_t limit = train_loader_ ? BatchLimit(options_.limit_train_batches, train_loader_->batches_per_epoch()) : 0;
  const bool epoch_done = batch_in_epoch_ >= limit;
  const int64_t epoch = epoch_done ? epoch_ + 1 : epoch_;
  const int64_t batch = epoch_done ? 0 : batch_in_epoch_;
  ckpt.insert("epoch", epoch_);
  ckpt.insert("global_step", global_step_);
  ckpt.insert("shoal_version", std::string(SHOAL_VERSION_STRING));
  c10::Dict<std::string, std::string> hparams;
  for (const auto& [k, v] : options_.hyper_parameters) hparams.insert(k, v);
  ckpt.insert("hyper_parameters", hparams);
  if (!weights_only) {
    c10::List<c10::IValue> optimizers(c10::AnyType::get());
    if (optimizer_) optimizers.push_back(OptimizerState(*optimizer_));
    ckpt.insert("optimizer_states", optimizers);
    c10::List<c10::IValue> schedulers(c10::AnyType::get());
    if (schedule_) {
      Dict s = NewDict();
      s.insert("name", schedule_->name);
      s.insert("interval", schedule_->interval);
      s.insert("last_epoch", schedule_t_);
      s.insert("ticks", schedule_ticks_);
      s.insert("base_lrs", c10::List<double>(base_lrs_));
      schedulers.push_back(s);
    }
    ckpt.insert("lr_schedulers", schedulers);
    Dict loops = NewDict();
    loops.insert("epoch", epoch);
    loops.insert("batch_in_epoch", batch);
    ckpt.insert("loops", loops);
    c10::Dict<std::string, std::string> callback_states;
    for (const auto& c : callbacks_) callback_states.insert(c->name(), c->state_dict().dump());
    ckpt.insert("callbacks", callback_states);
    if (train_loader_) {
      data::LoaderState s = train_loader_->state_dict();
      s.epoch = epoch;
      s.position = batch;
      ckpt.insert("loader", s.ToJson());
    }
    ckpt.insert("rng_state", at::detail::getDefaultCPUGenerator().get_state());
    std::map<std::string, std::string> module_state;
    module_->on_save_checkpoint(module_state);
    c10::Dict<std::string, std::string> saved_module_state;
    for (const auto& [k, v] : module_state) saved_module_state.insert(k, v);
    ckpt.insert("module_state", saved_module_state);
  }
  std::vector<char> bytes = torch::pickle_save(c10::IValue(ckpt));
  WriteFileAtomically(path, std::string_view(bytes.data(), bytes.size()));
}

void Trainer::LoadCheckpoint(Module& module, const std::string& path, bool weights_only) {
  std::vector<uint8_t> raw;
  try {
    raw = ReadFile(path);
  } catch (const Error& e) {
    throw WithContext(e, "reading checkpoint");
  }
  const std::string where = "checkpoint '" + path + "'";
  c10::IValue value;
  try {
    value = torch::pickle_load(std::vector<char>(raw.begin(), raw.end()));
  } catch (const std::exception& e) {
    std::string message = e.what();
    throw InvalidError(where + " is corrupt or not a checkpoint: " + message.substr(0, message.find('\n')));
  }
  if (!value.isGenericDict()) throw InvalidError(where + " is not a checkpoint (not a dictionary)");
  Dict ckpt = value.toGenericDict();
  auto saved = Get(ckpt, "state_dict", where).toGenericDict();
  torch::NoGradGuard no_grad;
  std::vector<std::string> missing;
  auto load = [&](const std::string& name, at::Tensor& target) {
    auto it = saved.find(name);
    if (it == saved.end()) {
      missing.push_back(name);
      return;
    }
    at::Tensor t = it->value().toTensor();
    if (!t.sizes().equals(target.sizes())) {
      throw InvalidError(where + ": '" + name + "' has shape " + c10::str(t.sizes()) + ", the model's is " +
                         c10::str(target.sizes()) + " (a different model?)");
    }
    target.copy_(t);
  };
  for (auto& p : module.named_parameters()) load(p.key(), p.value());
  for (auto& b : module.named_buffers()) load(b.key(), b.value());
  if (!missing.empty()) {
    std::string names;
    for (const auto& n : missing) names += (names.empty() ? "" : ", ") + n;
    throw InvalidError(where + " lacks the model's " + names + " (a different model?)");
  }
  if (weights_only || !ckpt.contains("loops")) return;
  Dict loops = Get(ckpt, "loops", where).toGenericDict();
  epoch_ = Get(loops, "epoch", where).toInt();
  batch_in_epoch_ = Get(loops, "batch_in_epoch", where).toInt();
  global_step_ = Get(ckpt, "global_step", where).toInt();
  auto optimizers = Get(ckpt, "optimizer_states", where).toList();
  if (optimizer_ && optimizers.size() > 0) RestoreOptimizer(*optimizer_, optimizers.get(0).toGenericDict(), where);
  auto schedulers = Get(ckpt, "lr_schedulers", where).toList();
  if (schedule_ && schedulers.size() > 0) {
    Dict s = schedulers.get(0).toGenericDict();
    schedule_t_ = Get(s, "last_epoch", where).toInt();
    schedule_ticks_ = s.contains("ticks") ? Get(s, "ticks", where).toInt() : 0;
    base_lrs_ = Get(s, "base_lrs", where).toDoubleVector();
    if (base_lrs_.size() != optimizer_->param_groups().size()) throw InvalidError(where + ": scheduler state does not fit the optimizer");
    ApplySchedule();
  }
  auto callback_states = Get(ckpt, "callbacks", where).toGenericDict();
  for (const auto& c : callbacks_) {
    auto it = callback_states.find(c->name());
    if (it != callback_states.end()) c->load_state_dict(nlohmann::json::parse(it->value().toStringRef()));
  }
  // The saved loader state is for readers of the file; resuming repositions the loader from
  // "loops" (epoch and batch), which it equals.
  if (ckpt.contains("module_state")) {
    std::map<std::string, std::string> module_state;
    for (const auto& entry : Get(ckpt, "module_state", where).toGenericDict()) {
      module_state[entry.key().toStringRef()] = entry.value().toStringRef();
    }
    module.on_load_checkpoint(module_state);
  }
  if (ckpt.contains("rng_state")) {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(Get(ckpt, "rng_state", where).toTensor());
  }
  if (resume_log_) Progress("resumed from " + path + " at epoch " + std::to_string(epoch_) + ", batch " + std::to_string(batch_in_epoch_) +
           ", step " + std::to_string(global_step_));
}

Metrics Trainer::RunEvaluation(Module& module, const data::LoaderOptions& loader_options, const std::string& stage,
                               double limit, int64_t max_batches) {
  data::LoaderOptions o = Shard(loader_options, /*evaluation=*/true);
  o.num_epochs = 1;
  o.shuffle = false;
  data::Loader loader(o);
  int64_t batches = BatchLimit(limit, loader.batches_per_epoch());
  if (max_batches >= 0) batches = std::min(batches, max_batches);
  const bool was_training = module.is_training();
  module.eval();
  torch::NoGradGuard no_grad;
  module.TakeLogged();
  for (int64_t i = 0; i < batches; ++i) {
    std::optional<data::Batch> batch = loader.Next();
    if (!batch) break;
    TensorBatch t = ToTensors(std::move(*batch));
    if (stage == "val") {
      module.validation_step(t, i);
    } else {
      module.test_step(t, i);
    }
  }
  module.train(was_training);
  auto sums = module.TakeLogged().epoch_sums;
  ReduceSums(sums, stage == "val" ? "validation metrics" : "test metrics");
  Metrics out;
  for (const auto& [name, sum] : sums) {
    if (sum.second > 0) out[name] = sum.first / static_cast<double>(sum.second);
  }
  return out;
}

void Trainer::fit(Module& module, DataModule& data, const std::string& ckpt_path) {
  start_ = std::chrono::steady_clock::now();
  module_ = &module;
  torch::manual_seed(options_.seed);
  // deterministic: LibTorch's deterministic algorithms only (an op without one is an error).
  if (options_.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  // prepare_data once per node (local rank 0), the others waiting for it.
  if (!options_.group || options_.group->env().local_rank == 0) data.prepare_data();
  if (options_.group) options_.group->Barrier("waiting for prepare_data");
  data.setup("fit");
  data::LoaderOptions train_options = Shard(data.train_loader(), /*evaluation=*/false);
  train_options.num_epochs = -1;  // the trainer counts epochs
  train_loader_ = std::make_unique<data::Loader>(train_options);
  std::optional<data::LoaderOptions> val_options = data.val_loader();
  optimizer_ = module.configure_optimizers();
  if (!optimizer_) throw InvalidError("configure_optimizers() returned no optimizer");
  schedule_ = module.configure_scheduler();
  if (schedule_ && schedule_->name == "none" && schedule_->warmup == 0) schedule_.reset();
  base_lrs_.clear();
  for (auto& group : optimizer_->param_groups()) base_lrs_.push_back(group.options().get_lr());
  schedule_t_ = schedule_ticks_ = 0;
  const int64_t per_epoch = BatchLimit(options_.limit_train_batches, train_loader_->batches_per_epoch());
  steps_per_epoch_ = (per_epoch + options_.accumulate_grad_batches - 1) / options_.accumulate_grad_batches;
  if (schedule_) ValidateSchedule(*schedule_);
  ApplySchedule();
  const bool resuming = !ckpt_path.empty();
  if (resuming) {
    resume_log_ = true;
    LoadCheckpoint(module, ResolveCheckpoint(ckpt_path));
    resume_log_ = false;
  }
  grad_sync_.reset();
  if (options_.group && world_size() > 1) {
    // Every rank starts from rank 0's weights and optimizer state, after checking the models agree.
    dist::BroadcastModel(*options_.group, module, optimizer_.get());
    std::vector<at::Tensor> params;
    for (const at::Tensor& p : module.parameters()) {
      if (p.requires_grad()) params.push_back(p);
    }
    dist::GradSyncOptions sync;
    sync.bucket_bytes = options_.grad_bucket_bytes;
    sync.compression = options_.grad_compression;
    grad_sync_ = std::make_unique<dist::GradientSync>(options_.group, params, sync);
  }
  for (const auto& c : callbacks_) c->on_fit_start(*this);
  module.on_fit_start();
  if (val_options && options_.num_sanity_val_steps > 0 && !resuming) {
    sanity_checking_ = true;
    RunEvaluation(module, *val_options, "val", options_.limit_val_batches, options_.num_sanity_val_steps);
    sanity_checking_ = false;
  }
  const int64_t val_every = options_.val_check_interval < 1.0
                                ? std::max<int64_t>(1, std::llround(options_.val_check_interval * per_epoch))
                                : per_epoch;
  Progress("fitting: " + std::to_string(train_loader_->rows()) + " training rows, " + std::to_string(per_epoch) +
           " batches an epoch" + (world_size() > 1 ? " on each of " + std::to_string(world_size()) + " ranks" : "") +
           ", up to " + std::to_string(options_.max_epochs) + " epochs");
  auto validate = [&] {
    if (!val_options) return;
    ClearProgress();
    Metrics val = RunEvaluation(module, *val_options, "val", options_.limit_val_batches);
    for (const auto& [k, v] : val) metrics_[k] = v;
    module.on_validation_epoch_end();
    for (const auto& c : callbacks_) c->on_validation_end(*this);
  };
  should_stop = false;
  const std::vector<at::Tensor> buffers = module.buffers();
  while (epoch_ < options_.max_epochs && !should_stop) {
    module.train();
    module.on_train_epoch_start();
    for (const auto& c : callbacks_) c->on_train_epoch_start(*this);
    data::LoaderState at = train_loader_->state_dict();
    if (at.epoch != epoch_ || at.position != batch_in_epoch_) {
      at.epoch = epoch_;
      at.position = batch_in_epoch_;
      train_loader_->load_state_dict(at);
    }
    auto epoch_start = std::chrono::steady_clock::now();
    double waited = 0;
    module.TakeLogged();
    std::map<std::string, std::pair<double, int64_t>> sums;
    while (batch_in_epoch_ < per_epoch) {
      auto wait_start = std::chrono::steady_clock::now();
      std::optional<data::Batch> batch = train_loader_->Next();
      waited += Seconds(wait_start);
      if (!batch) break;
      TensorBatch t = ToTensors(std::move(*batch));
      // As DDP: every rank starts a step with rank 0's buffers (BatchNorm statistics).
      if (grad_sync_ && batch_in_epoch_ % options_.accumulate_grad_batches == 0) dist::BroadcastBuffers(*options_.group, buffers);
      at::Tensor loss = module.training_step(t, batch_in_epoch_);
      if (!loss.defined()) throw InvalidError("training_step() returned no loss");
      // Gradients are averaged across ranks on the last micro-step of an accumulation only.
      const bool step_now = (batch_in_epoch_ + 1) % options_.accumulate_grad_batches == 0 || batch_in_epoch_ + 1 == per_epoch;
      if (grad_sync_) grad_sync_->Prepare(step_now);
      at::Tensor scaled = options_.accumulate_grad_batches > 1 ? loss / options_.accumulate_grad_batches : loss;
      // Dividing the loss by the world size makes the summed gradients the average, without a
      // pass over them.
      if (grad_sync_) scaled = grad_sync_->ScaleLoss(scaled);
      scaled.backward();
      if (grad_sync_ && step_now) grad_sync_->Finish();
      ++batch_in_epoch_;
      Module::Logged logged = module.TakeLogged();
      for (const auto& [k, v] : logged.epoch_sums) {
        sums[k].first += v.first;
        sums[k].second += v.second;
      }
      if (step_now) {
        if (options_.gradient_clip_val > 0) {
          if (options_.gradient_clip_algorithm == "norm") {
            torch::nn::utils::clip_grad_norm_(module.parameters(), options_.gradient_clip_val);
          } else {
            torch::nn::utils::clip_grad_value_(module.parameters(), options_.gradient_clip_val);
          }
        }
        optimizer_->step();
        optimizer_->zero_grad();
        ++global_step_;
        AdvanceSchedule("step");
        if (options_.scale_lr != "none" && options_.scale_lr_warmup_epochs > 0) ApplySchedule();  // the warmup ramp
        if (options_.max_steps > 0 && global_step_ >= options_.max_steps) should_stop = true;
        if (options_.max_time_s > 0 && Seconds(start_) >= options_.max_time_s) should_stop = true;
        SyncStep(logged.step_values);
        for (const auto& c : callbacks_) c->on_train_batch_end(*this, logged.step_values);
        if (global_step_ % options_.log_every_n_steps == 0) {
          double elapsed = Seconds(epoch_start);
          double rate = batch_in_epoch_ / std::max(elapsed, 1e-9);
          std::string line = "epoch " + std::to_string(epoch_) + " batch " + std::to_string(batch_in_epoch_) + "/" +
                             std::to_string(per_epoch) + " (" + Fixed(rate, 1) + " it/s, ETA " +
                             Fixed((per_epoch - batch_in_epoch_) / std::max(rate, 1e-9), 0) + " s, waiting on data " +
                             Fixed(100 * waited / std::max(elapsed, 1e-9), 0) + "%)";
          for (const std::string& name : logged.prog_bar) {
            auto it = logged.step_values.find(name);
            if (it != logged.step_values.end()) line += " " + name + "=" + Fixed(it->second, 4);
          }
          Progress(line, static_cast<double>(batch_in_epoch_) / static_cast<double>(per_epoch));
        }
      }
      if (val_every < per_epoch && batch_in_epoch_ % val_every == 0 && batch_in_epoch_ < per_epoch &&
          (epoch_ + 1) % options_.check_val_every_n_epoch == 0) {
        if (grad_sync_) dist::BroadcastBuffers(*options_.group, buffers);  // validate with rank 0's buffers
        validate();
        module.train();
      }
      if (should_stop) break;
    }
    if (grad_sync_) dist::BroadcastBuffers(*options_.group, buffers);  // validation and checkpoints see rank 0's
    ReduceSums(sums, "training metrics of epoch " + std::to_string(epoch_));
    for (const auto& [k, v] : sums) {
      if (v.second > 0) metrics_[k] = v.first / static_cast<double>(v.second);
    }
    const double epoch_seconds = Seconds(epoch_start);
    ClearProgress();  // callbacks and validation may print
    input_wait_share_ = epoch_seconds > 0 ? waited / epoch_seconds : 0;
    metrics_["input_wait_share"] = input_wait_share_;
    if ((epoch_ + 1) % options_.check_val_every_n_epoch == 0) validate();
    module.on_train_epoch_end();
    for (const auto& c : callbacks_) c->on_train_epoch_end(*this);
    AdvanceSchedule("epoch");
    std::string line = "epoch " + std::to_string(epoch_) + " done in " + Fixed(epoch_seconds, 1) + " s, step " +
                       std::to_string(global_step_) + ", waiting on data " + Fixed(100 * input_wait_share_, 1) + "%:";
    for (const auto& [k, v] : metrics_) {
      if (k != "input_wait_share") line += " " + k + "=" + Fixed(v, 4);
    }
    Progress(line);
    if (input_wait_share_ > 0.10 && is_global_zero()) {
      std::cerr << "shoal train: warning: training is input-bound: " << Fixed(100 * input_wait_share_, 0)
                << "% of the epoch went to waiting for batches; raise the loader's threads or prefetch\n";
    }
    ++epoch_;
    batch_in_epoch_ = 0;
    if (options_.group && world_size() > 1) {  // a stop on any rank stops all
      at::Tensor stop = torch::full({1}, should_stop ? 1.0 : 0.0, torch::kFloat64);
      options_.group->AllReduce(stop, dist::Reduce::kMax, "the stop decision of epoch " + std::to_string(epoch_ - 1));
      should_stop = stop.item<double>() > 0;
    }
    // Lightning's rule: no stop before min_epochs.
    if (should_stop && epoch_ < options_.min_epochs && !(options_.max_steps > 0 && global_step_ >= options_.max_steps)) {
      should_stop = false;
    }
  }
  module.on_fit_end();
  for (const auto& c : callbacks_) c->on_fit_end(*this);
  uint32_t crc = 0;
  for (const auto& t : module.named_parameters()) {
    at::Tensor c = t.value().detach().contiguous();
    crc = Crc32(crc, static_cast<const uint8_t*>(c.data_ptr()), c.nbytes());
  }
  for (const auto& t : module.named_buffers()) {
    at::Tensor c = t.value().detach().contiguous();
    crc = Crc32(crc, static_cast<const uint8_t*>(c.data_ptr()), c.nbytes());
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc);
  weights_crc32_ = hex;
  if (options_.group && world_size() > 1) {
    std::vector<std::string> all = options_.group->AllGather(weights_crc32_, "comparing the ranks' final weights");
    for (int r = 1; r < world_size(); ++r) {
      if (all[r] != all[0]) {
        throw InvalidError("after training, rank " + std::to_string(r) + "'s weights (CRC-32 " + all[r] +
                           ") differ from rank 0's (" + all[0] + "): the ranks drifted apart");
      }
    }
  }
}

void Trainer::ApplySchedule() {
  if (!optimizer_ || (!schedule_ && options_.scale_lr == "none")) return;
  const double scale = LrScale();
  auto& groups = optimizer_->param_groups();
  for (size_t i = 0; i < groups.size() && i < base_lrs_.size(); ++i) {
    const double lr = schedule_ ? ScheduledLr(*schedule_, base_lrs_[i], schedule_t_) : base_lrs_[i];
    groups[i].options().set_lr(lr * scale);
  }
}

void Trainer::AdvanceSchedule(const std::string& interval) {
  if (!schedule_ || schedule_->interval != interval) return;
  if (++schedule_ticks_ < schedule_->frequency) return;
  schedule_ticks_ = 0;
  ++schedule_t_;
  ApplySchedule();
}

double Trainer::learning_rate() const {
  return optimizer_ && !optimizer_->param_groups().empty() ? optimizer_->param_groups()[0].options().get_lr() : 0.0;
}

std::string Trainer::optimizer_name() const {
  if (dynamic_cast<torch::optim::Adam*>(optimizer_.get())) return "Adam";
  if (dynamic_cast<torch::optim::AdamW*>(optimizer_.get())) return "AdamW";
  if (dynamic_cast<torch::optim::SGD*>(optimizer_.get())) return "SGD";
  return "optimizer";
}

Metrics Trainer::validate(Module& module, DataModule& data) {
  module_ = &module;
  data.setup("validate");
  std::optional<data::LoaderOptions> val = data.val_loader();
  if (!val) throw InvalidError("the data module has no validation loader");
  return RunEvaluation(module, *val, "val", options_.limit_val_batches);
}

Metrics Trainer::test(Module& module, DataModule& data, const std::string& ckpt_path) {
  module_ = &module;
  if (options_.group && !ckpt_path.empty()) options_.group->Barrier("waiting for rank 0's checkpoint");
  if (!ckpt_path.empty()) LoadCheckpoint(module, ResolveCheckpoint(ckpt_path), /*weights_only=*/true);
  data.setup("test");
  std::optional<data::LoaderOptions> test = data.test_loader();
  if (!test) throw InvalidError("the data module has no test loader");
  Metrics m = RunEvaluation(module, *test, "test", options_.limit_test_batches);
  for (const auto& [k, v] : m) metrics_[k] = v;
  return m;
}

std::vector<std::pair<int64_t, int64_t>> Trainer::predict(Module& module, DataModule& data) {
  module_ = &module;
  data.setup("predict");
  std::optional<data::LoaderOptions> options = data.predict_loader();
  if (!options) throw InvalidError("the data module has no predict loader");
  options->num_epochs = 1;
  options->shuffle = false;
  data::Loader loader(*options);
  module.eval();
  torch::NoGradGuard no_grad;
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t index = 0;
  while (std::optional<data::Batch> batch = loader.Next()) {
    TensorBatch t = ToTensors(std::move(*batch));
    at::Tensor predicted = module.predict_step(t, index++).to(torch::kInt64).contiguous();
    for (int64_t i = 0; i < predicted.size(0); ++i) out.emplace_back(t.ids[i].item<int64_t>(), predicted[i].item<int64_t>());
  }
  return out;
}

}  // namespace shoal::train
