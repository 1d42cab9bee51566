// Callbacks of the Trainer: the public interface, EarlyStopping and ModelCheckpoint with
// Lightning's parameters and semantics, and the progress reporter.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shoal::train {

class Trainer;
using Metrics = std::map<std::string, double>;

/// Hooks the Trainer calls, in this order: on_fit_start, then per epoch on_train_epoch_start,
/// on_train_batch_end per optimizer step, on_validation_end after each validation run,
/// on_train_epoch_end; then on_fit_end. Metrics are already reduced across ranks, so every rank
/// decides the same. State a callback returns from state_dict() is saved in checkpoints under
/// its name() and given back to load_state_dict() on resume.
class Callback {
 public:
  virtual ~Callback() = default;
  virtual std::string name() const = 0;
  virtual void on_fit_start(Trainer& trainer) {}
  virtual void on_train_epoch_start(Trainer& trainer) {}
  virtual void on_train_batch_end(Trainer& trainer, const Metrics& step_metrics) {}
  virtual void on_validation_end(Trainer& trainer) {}
  virtual void on_train_epoch_end(Trainer& trainer) {}
  virtual void on_fit_end(Trainer& trainer) {}
  virtual nlohmann::json state_dict() const { return nlohmann::json::object(); }
  virtual void load_state_dict(const nlohmann::json& state) {}
};

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;
  int patience = 3;
  std::string mode = "min";  ///< min or max
  bool strict = true;        ///< a missing monitor is an error (else a warning, and no check)
  bool check_finite = true;  ///< stop when the monitor is NaN or infinite
  std::optional<double> stopping_threshold;    ///< stop once the monitor is better than this
  std::optional<double> divergence_threshold;  ///< stop once the monitor is worse than this
  bool check_on_train_epoch_end = false;       ///< check after training epochs, not validation
};

/// Lightning's EarlyStopping: the checks run in its order (finite, stopping threshold,
/// divergence threshold, improvement by more than min_delta, patience).
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  std::string name() const override { return "EarlyStopping{monitor=" + options_.monitor + "}"; }
  void on_validation_end(Trainer& trainer) override;
  void on_train_epoch_end(Trainer& trainer) override;
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;

  /// One check with the monitor's current value: whether to stop, and why (or how it improved).
  std::pair<bool, std::string> Evaluate(double current);
  double best_score() const { return best_score_; }
  int wait_count() const { return wait_count_; }
  int64_t stopped_epoch() const { return stopped_epoch_; }

 private:
  void Check(Trainer& trainer);
  bool Better(double a, double b) const { return options_.mode == "min" ? a < b : a > b; }

  EarlyStoppingOptions options_;
  double best_score_;
  int wait_count_ = 0;
  int64_t stopped_epoch_ = 0;
};

struct ModelCheckpointOptions {
  std::string dirpath;                        ///< default: <default_root_dir>/checkpoints
  std::string filename = "{epoch}-{step}";    ///< e.g. "{epoch}-{val_loss:.2f}"; ".ckpt" is added
  std::string monitor;                        ///< empty: keep the latest
  std::string mode = "min";
  int save_top_k = 1;                         ///< -1: all, 0: none
  bool save_last = false;                     ///< also keep last.ckpt, the latest state
  int every_n_epochs = 1;                     ///< 0: not at epoch ends
  int every_n_train_steps = 0;                ///< 0: not by steps
  bool save_weights_only = false;
};

/// Lightning's ModelCheckpoint: names files from the template ("epoch=3-val_loss=0.25.ckpt"),
/// keeps the best save_top_k by the monitor, and last.ckpt when asked.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options);
  std::string name() const override { return "ModelCheckpoint{monitor=" + options_.monitor + "}"; }
  void on_fit_start(Trainer& trainer) override;
  void on_train_batch_end(Trainer& trainer, const Metrics& step_metrics) override;
  void on_validation_end(Trainer& trainer) override;
  void on_train_epoch_end(Trainer& trainer) override;
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;

  /// The file name for these metrics: the template with "{name}" or "{name:fmt}" replaced by
  /// "name=value" (fmt as in Python: .2f, 02d). Throws InvalidError for an unknown metric.
  std::string FormatName(const Metrics& metrics, int64_t epoch, int64_t step) const;

  /// Top-k bookkeeping for a candidate with `score` (nullopt without a monitor): whether to save
  /// it, and the files to delete once it is saved.
  struct Decision {
    bool save = false;
    std::vector<std::string> remove;
  };
  Decision Consider(const std::string& path, std::optional<double> score);

  const std::string& best_model_path() const { return best_model_path_; }
  std::optional<double> best_model_score() const { return best_model_score_; }
  const std::map<std::string, double>& best_k_models() const { return best_k_models_; }
  const std::string& last_model_path() const { return last_model_path_; }
  const std::string& dirpath() const { return options_.dirpath; }

 private:
  void Save(Trainer& trainer, const Metrics& metrics);
  bool Better(double a, double b) const { return options_.mode == "min" ? a < b : a > b; }

  ModelCheckpointOptions options_;
  std::map<std::string, double> best_k_models_;
  std::vector<std::string> latest_;  // without a monitor: the saved files, oldest first
  std::string best_model_path_, last_model_path_;
  std::optional<double> best_model_score_;
  int64_t last_saved_step_ = -1;
};

/// Lightning's LearningRateMonitor: logs the learning rate as "lr-<Optimizer>" (lr-Adam, lr-SGD)
/// at each epoch's start, or after every optimizer step with logging_interval "step".
class LearningRateMonitor : public Callback {
 public:
  explicit LearningRateMonitor(std::string logging_interval = "epoch");
  std::string name() const override { return "LearningRateMonitor"; }
  void on_train_epoch_start(Trainer& trainer) override;
  void on_train_batch_end(Trainer& trainer, const Metrics& step_metrics) override;

 private:
  std::string interval_;
};

}  // namespace shoal::train
