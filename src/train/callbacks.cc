#include "train/callbacks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>

#include "train/trainer.h"
#include "util/error.h"

namespace shoal::train {

namespace {

std::string Number(double v, int digits = 3) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, v);
  return buffer;
}

void CheckMode(const std::string& mode, const char* who) {
  if (mode != "min" && mode != "max") throw InvalidError(std::string(who) + " mode must be min or max, not '" + mode + "'");
}

}  // namespace

// ---- EarlyStopping ----

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  CheckMode(options_.mode, "EarlyStopping");
  if (options_.patience < 0) throw InvalidError("EarlyStopping patience must not be negative");
  // Lightning keeps min_delta's sign with the mode: an improvement must beat best - |min_delta|
  // (min) or best + |min_delta| (max).
  options_.min_delta = std::abs(options_.min_delta) * (options_.mode == "min" ? -1 : 1);
  best_score_ = options_.mode == "min" ? std::numeric_limits<double>::infinity()
                                       : -std::numeric_limits<double>::infinity();
}

std::pair<bool, std::string> EarlyStopping::Evaluate(double current) {
  const std::string& m = options_.monitor;
  if (options_.check_finite && !std::isfinite(current)) {
    return {true, "Monitored metric " + m + " = " + Number(current) + " is not finite. Previous best value was " +
                      Number(best_score_) + ". Signaling Trainer to stop."};
  }
  if (options_.stopping_threshold && Better(current, *options_.stopping_threshold)) {
    return {true, "Stopping threshold reached: " + m + " = " + Number(current) + " " +
                      (options_.mode == "min" ? "<" : ">") + " " + Number(*options_.stopping_threshold) +
                      ". Signaling Trainer to stop."};
  }
  if (options_.divergence_threshold && Better(-current, -*options_.divergence_threshold)) {
    return {true, "Divergence threshold reached: " + m + " = " + Number(current) + " " +
                      (options_.mode == "min" ? ">" : "<") + " " + Number(*options_.divergence_threshold) +
                      ". Signaling Trainer to stop."};
  }
  if (Better(current - options_.min_delta, best_score_)) {
    std::string message = std::isfinite(best_score_)
                              ? "Metric " + m + " improved by " + Number(std::abs(best_score_ - current)) +
                                    " >= min_delta = " + Number(std::abs(options_.min_delta)) + ". New best score: " +
                                    Number(current)
                              : "Metric " + m + " improved. New best score: " + Number(current);
    best_score_ = current;
    wait_count_ = 0;
    return {false, message};
  }
  ++wait_count_;
  if (wait_count_ >= options_.patience) {
    return {true, "Monitored metric " + m + " did not improve in the last " + std::to_string(wait_count_) +
                      " records. Best score: " + Number(best_score_) + ". Signaling Trainer to stop."};
  }
  return {false, ""};
}

void EarlyStopping::Check(Trainer& trainer) {
  if (trainer.sanity_checking()) return;
  auto it = trainer.callback_metrics().find(options_.monitor);
  if (it == trainer.callback_metrics().end()) {
    std::string available;
    for (const auto& [k, v] : trainer.callback_metrics()) available += (available.empty() ? "" : ", ") + k;
    std::string message = "EarlyStopping conditioned on metric '" + options_.monitor +
                          "', which is not available (available: " + available + ")";
    if (options_.strict) throw InvalidError(message);
    if (trainer.is_global_zero()) std::cerr << "shoal train: warning: " << message << "; not checked\n";
    return;
  }
  auto [stop, reason] = Evaluate(it->second);
  if (stop) {
    stopped_epoch_ = trainer.current_epoch();
    trainer.should_stop = true;
  }
  if (!reason.empty() && trainer.is_global_zero()) std::cerr << "shoal train: EarlyStopping: " << reason << "\n";
}

void EarlyStopping::on_validation_end(Trainer& trainer) {
  if (!options_.check_on_train_epoch_end) Check(trainer);
}

void EarlyStopping::on_train_epoch_end(Trainer& trainer) {
  if (options_.check_on_train_epoch_end) Check(trainer);
}

nlohmann::json EarlyStopping::state_dict() const {
  return {{"wait_count", wait_count_}, {"stopped_epoch", stopped_epoch_}, {"best_score", best_score_},
          {"patience", options_.patience}};
}

void EarlyStopping::load_state_dict(const nlohmann::json& state) {
  wait_count_ = state.value("wait_count", 0);
  stopped_epoch_ = state.value("stopped_epoch", int64_t{0});
  if (state.contains("best_score") && state["best_score"].is_number()) best_score_ = state["best_score"].get<double>();
}

// ---- ModelCheckpoint ----

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : options_(std::move(options)) {
  CheckMode(options_.mode, "ModelCheckpoint");
  if (options_.save_top_k < -1) throw InvalidError("ModelCheckpoint save_top_k must be -1 or more");
  if (options_.monitor.empty() && options_.save_top_k > 1) {
    throw InvalidError("ModelCheckpoint save_top_k = " + std::to_string(options_.save_top_k) +
                       " needs a monitor to rank checkpoints by");
  }
}

std::string ModelCheckpoint::FormatName(const Metrics& metrics, int64_t epoch, int64_t step) const {
  std::string out;
  const std::string& t = options_.filename;
  for (size_t i = 0; i < t.size();) {
    if (t[i] != '{') {
      out += t[i++];
      continue;
    }
    size_t close = t.find('}', i);
    if (close == std::string::npos) throw InvalidError("unclosed '{' in checkpoint filename '" + t + "'");
    std::string field = t.substr(i + 1, close - i - 1);
    std::string spec;
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    double value;
    bool integer = false;
    if (field == "epoch") {
      value = static_cast<double>(epoch);
      integer = true;
    } else if (field == "step") {
      value = static_cast<double>(step);
      integer = true;
    } else {
      auto it = metrics.find(field);
      if (it == metrics.end()) throw InvalidError("checkpoint filename '" + t + "' names metric '" + field + "', which is not logged");
      value = it->second;
    }
    char buffer[64];
    if (spec.empty()) {
      if (integer) {
        std::snprintf(buffer, sizeof(buffer), "%lld", static_cast<long long>(value));
      } else {
        std::snprintf(buffer, sizeof(buffer), "%g", value);
      }
    } else {
      // Python's format spec, as far as checkpoint names use it: [0][width][.precision](f|d|e|g).
      char kind = spec.back();
      std::string body = spec.substr(0, spec.size() - 1);
      if (std::string("fdeg").find(kind) == std::string::npos) throw InvalidError("unsupported format '" + spec + "' in '" + t + "'");
      std::string format = "%" + body + (kind == 'd' ? "lld" : std::string(1, kind));
      if (kind == 'd') {
        std::snprintf(buffer, sizeof(buffer), format.c_str(), static_cast<long long>(std::llround(value)));
      } else {
        std::snprintf(buffer, sizeof(buffer), format.c_str(), value);
      }
    }
    out += field + "=" + buffer;
    i = close + 1;
  }
  return out + ".ckpt";
}

ModelCheckpoint::Decision ModelCheckpoint::Consider(const std::string& path, std::optional<double> score) {
  Decision d;
  if (options_.save_top_k == 0) return d;
  if (!score) {
    // No monitor: keep the latest save_top_k (all with -1).
    d.save = true;
    latest_.erase(std::remove(latest_.begin(), latest_.end(), path), latest_.end());
    latest_.push_back(path);
    while (options_.save_top_k > 0 && static_cast<int>(latest_.size()) > options_.save_top_k) {
      d.remove.push_back(latest_.front());
      latest_.erase(latest_.begin());
    }
    best_model_path_ = path;
    return d;
  }
  const bool full = options_.save_top_k > 0 && static_cast<int>(best_k_models_.size()) >= options_.save_top_k &&
                    best_k_models_.count(path) == 0;
  if (full) {
    // The worst kept one: the largest score for min, the smallest for max.
    auto worst = best_k_models_.begin();
    for (auto it = best_k_models_.begin(); it != best_k_models_.end(); ++it) {
      if (Better(worst->second, it->second)) worst = it;
    }
    if (!Better(*score, worst->second)) return d;  // not better than the k-th best
    d.remove.push_back(worst->first);
    best_k_models_.erase(worst);
  }
  d.save = true;
  best_k_models_[path] = *score;
  auto best = best_k_models_.begin();
  for (auto it = best_k_models_.begin(); it != best_k_models_.end(); ++it) {
    if (Better(it->second, best->second)) best = it;
  }
  best_model_path_ = best->first;
  best_model_score_ = best->second;
  return d;
}

void ModelCheckpoint::on_fit_start(Trainer& trainer) {
  if (options_.dirpath.empty()) {
    options_.dirpath = (std::filesystem::path(trainer.options().default_root_dir) / "checkpoints").string();
  }
  std::filesystem::create_directories(options_.dirpath);
}

void ModelCheckpoint::Save(Trainer& trainer, const Metrics& metrics) {
  if (trainer.sanity_checking() || trainer.options().fast_dev_run) return;
  if (last_saved_step_ == trainer.global_step()) return;  // saved at this step already
  std::optional<double> score;
  if (!options_.monitor.empty()) {
    auto it = metrics.find(options_.monitor);
    if (it == metrics.end()) return;  // the monitor is not computed at this point (e.g. before validation)
    score = it->second;
  }
  std::string path = (std::filesystem::path(options_.dirpath) /
                      FormatName(metrics, trainer.current_epoch(), trainer.global_step()))
                         .string();
  Decision d = Consider(path, score);
  if (d.save) {
    trainer.SaveCheckpoint(path, options_.save_weights_only);
    last_saved_step_ = trainer.global_step();
  }
  for (const std::string& old : d.remove) {
    if (old != path && trainer.is_global_zero()) std::filesystem::remove(old);  // rank 0 alone writes files
  }
  if (options_.save_last) {
    last_model_path_ = (std::filesystem::path(options_.dirpath) / "last.ckpt").string();
    trainer.SaveCheckpoint(last_model_path_, options_.save_weights_only);
  }
}

void ModelCheckpoint::on_train_batch_end(Trainer& trainer, const Metrics& step_metrics) {
  if (options_.every_n_train_steps > 0 && trainer.global_step() % options_.every_n_train_steps == 0) {
    Metrics merged = trainer.callback_metrics();
    for (const auto& [k, v] : step_metrics) merged[k] = v;
    Save(trainer, merged);
  }
}

void ModelCheckpoint::on_validation_end(Trainer& trainer) {
  if (options_.every_n_train_steps == 0 && options_.every_n_epochs > 0 && !options_.monitor.empty() &&
      (trainer.current_epoch() + 1) % options_.every_n_epochs == 0) {
    Save(trainer, trainer.callback_metrics());
  }
}

void ModelCheckpoint::on_train_epoch_end(Trainer& trainer) {
  if (options_.every_n_train_steps == 0 && options_.every_n_epochs > 0 &&
      (trainer.current_epoch() + 1) % options_.every_n_epochs == 0) {
    Save(trainer, trainer.callback_metrics());
  }
}

nlohmann::json ModelCheckpoint::state_dict() const {
  nlohmann::json best = nlohmann::json::object();
  for (const auto& [path, score] : best_k_models_) best[path] = score;
  return {{"monitor", options_.monitor},
          {"best_model_path", best_model_path_},
          {"best_model_score", best_model_score_ ? nlohmann::json(*best_model_score_) : nlohmann::json()},
          {"best_k_models", best},
          {"last_model_path", last_model_path_},
          {"dirpath", options_.dirpath}};
}

void ModelCheckpoint::load_state_dict(const nlohmann::json& state) {
  best_model_path_ = state.value("best_model_path", "");
  last_model_path_ = state.value("last_model_path", "");
  if (state.contains("best_model_score") && state["best_model_score"].is_number()) {
    best_model_score_ = state["best_model_score"].get<double>();
  }
  best_k_models_.clear();
  if (state.contains("best_k_models") && state["best_k_models"].is_object()) {
    for (const auto& [path, score] : state["best_k_models"].items()) {
      if (score.is_number()) best_k_models_[path] = score.get<double>();
    }
  }
}

// ---- LearningRateMonitor ----

LearningRateMonitor::LearningRateMonitor(std::string logging_interval) : interval_(std::move(logging_interval)) {
  if (interval_ != "epoch" && interval_ != "step") throw InvalidError("LearningRateMonitor logging_interval must be epoch or step");
}

void LearningRateMonitor::on_train_epoch_start(Trainer& trainer) {
  if (interval_ == "epoch") trainer.LogMetric("lr-" + trainer.optimizer_name(), trainer.learning_rate());
}

void LearningRateMonitor::on_train_batch_end(Trainer& trainer, const Metrics&) {
  if (interval_ == "step") trainer.LogMetric("lr-" + trainer.optimizer_name(), trainer.learning_rate());
}

}  // namespace shoal::train
