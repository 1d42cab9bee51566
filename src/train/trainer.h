// Lightning's structure in C++: a Module (the model and its steps), a DataModule (the data), and a
// Trainer (the loop) with callbacks and checkpoints.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/loader.h"
#include "train/batch_tensors.h"
#include "train/callbacks.h"
#include "train/schedule.h"

namespace shoal::dist {
class Group;
class GradientSync;
}  // namespace shoal::dist

namespace shoal::train {

class Trainer;

/// The model and what one step of each stage does. The defaults classify: cross entropy on
/// forward(images) against labels, logging <stage>_loss and <stage>_acc.
class Module : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& x) = 0;
  /// Returns the loss to minimise.
  virtual at::Tensor training_step(const TensorBatch& batch, int64_t batch_idx);
  virtual void validation_step(const TensorBatch& batch, int64_t batch_idx);
  virtual void test_step(const TensorBatch& batch, int64_t batch_idx);
  /// Class predictions.
  virtual at::Tensor predict_step(const TensorBatch& batch, int64_t batch_idx);
  virtual std::unique_ptr<torch::optim::Optimizer> configure_optimizers() = 0;
  /// The learning-rate schedule to go with the optimizer (interval, frequency, kind, warmup);
  /// none by default.
  virtual std::optional<ScheduleOptions> configure_scheduler() { return std::nullopt; }

  virtual void on_fit_start() {}
  virtual void on_fit_end() {}
  virtual void on_train_epoch_start() {}
  virtual void on_train_epoch_end() {}
  virtual void on_validation_epoch_end() {}
  /// Adds entries of the module's own to a checkpoint being saved (kept under "module_state").
  virtual void on_save_checkpoint(std::map<std::string, std::string>& state) {}
  /// Given back those entries when a checkpoint is loaded to resume.
  virtual void on_load_checkpoint(const std::map<std::string, std::string>& state) {}

  /// Records a metric of this step. on_step: kept as the step's value; on_epoch: averaged over
  /// the epoch (weighted by `count`, the rows it covers). prog_bar: shown in progress lines.
  void log(const std::string& name, double value, bool on_step = false, bool on_epoch = true, bool prog_bar = false,
           int64_t count = 1);

  /// Set by the Trainer: the metrics logged since the last take.
  struct Logged {
    std::map<std::string, std::pair<double, int64_t>> epoch_sums;  // name -> (sum of value*count, count)
    std::map<std::string, double> step_values;
    std::vector<std::string> prog_bar;
  };
  Logged TakeLogged();

 private:
  void ClassificationStep(const TensorBatch& batch, const std::string& stage, at::Tensor* loss_out);
  Logged logged_;
};

/// The data: loaders over Delta tables. prepare_data() runs once per node before setup().
class DataModule {
 public:
  virtual ~DataModule() = default;
  virtual void prepare_data() {}
  virtual void setup(const std::string& stage) {}
  virtual data::LoaderOptions train_loader() = 0;
  virtual std::optional<data::LoaderOptions> val_loader() { return std::nullopt; }
  virtual std::optional<data::LoaderOptions> test_loader() { return std::nullopt; }
  virtual std::optional<data::LoaderOptions> predict_loader() { return test_loader(); }
};

struct TrainerOptions {
  int64_t max_epochs = 10;
  int64_t min_epochs = 0;
  int64_t max_steps = -1;             ///< -1: no limit
  double max_time_s = 0;              ///< 0: no limit
  double val_check_interval = 1.0;    ///< share of an epoch between validations (1: at its end)
  int check_val_every_n_epoch = 1;
  int num_sanity_val_steps = 2;
  double limit_train_batches = 1.0;   ///< share (<= 1) or count (> 1) of batches
  double limit_val_batches = 1.0;
  double limit_test_batches = 1.0;
  int accumulate_grad_batches = 1;
  double gradient_clip_val = 0;       ///< 0: no clipping
  std::string gradient_clip_algorithm = "norm";  ///< norm or value
  int log_every_n_steps = 50;
  bool enable_progress_bar = true;
  uint64_t seed = 0;
  bool deterministic = false;
  bool fast_dev_run = false;          ///< one batch of each stage, no checkpoints
  std::string default_root_dir = "shoal-runs";
  std::map<std::string, std::string> hyper_parameters;  ///< saved in checkpoints

  // Data-parallel training: with a process group of more than one rank, every rank runs the same
  // Trainer; see docs/dist.md.
  std::shared_ptr<dist::Group> group;            ///< null: one process
  int64_t grad_bucket_bytes = int64_t{25} << 20;  ///< the allreduce fusion buffer
  std::string grad_compression = "none";          ///< none, fp16 or bf16 on the wire
  /// Scales the optimizer's learning rates by the world size: linear (x N), sqrt (x sqrt N) or
  /// none, ramped up linearly from x1 over `scale_lr_warmup_epochs` (Goyal et al. 2017).
  std::string scale_lr = "none";
  double scale_lr_warmup_epochs = 0;
};

/// Runs fit, validate, test and predict. Writes progress lines to stderr.
class Trainer {
 public:
  explicit Trainer(TrainerOptions options, std::vector<std::shared_ptr<Callback>> callbacks = {});
  ~Trainer();

  /// Trains; `ckpt_path` resumes from a checkpoint file, "last" (last.ckpt of the checkpoint
  /// callback) or "best" (its best model).
  void fit(Module& module, DataModule& data, const std::string& ckpt_path = "");
  Metrics validate(Module& module, DataModule& data);
  Metrics test(Module& module, DataModule& data, const std::string& ckpt_path = "");
  /// Predicted classes of the predict loader's rows, with their ids.
  std::vector<std::pair<int64_t, int64_t>> predict(Module& module, DataModule& data);

  /// Writes a checkpoint of the current state to `path` (temp file, fsync, rename).
  void SaveCheckpoint(const std::string& path, bool weights_only = false);

  // State callbacks read.
  int64_t current_epoch() const { return epoch_; }
  int64_t global_step() const { return global_step_; }
  const Metrics& callback_metrics() const { return metrics_; }
  bool should_stop = false;
  bool sanity_checking() const { return sanity_checking_; }
  const TrainerOptions& options() const { return options_; }
  /// The share of training step time spent waiting for the loader in the last epoch.
  double input_wait_share() const { return input_wait_share_; }
  std::string best_model_path() const;
  std::string last_model_path() const;
  /// The learning rate of the optimizer's first parameter group, and the optimizer's name.
  double learning_rate() const;
  std::string optimizer_name() const;
  /// Whether this process is rank 0 (or the only one): it alone writes checkpoints and logs.
  bool is_global_zero() const;
  int world_size() const;
  /// CRC-32 of the module's parameters and buffers after fit(), as 8 hex digits. With several
  /// ranks, fit() checks that every rank ends with the same value (an error names the first
  /// rank that differs): data-parallel ranks must never drift apart silently.
  const std::string& weights_crc32() const { return weights_crc32_; }
  /// Where the checkpoint callback keeps last.ckpt (it may not exist); empty without one.
  std::string last_checkpoint_path() const;
  /// Records a metric into callback_metrics() (for callbacks such as LearningRateMonitor).
  void LogMetric(const std::string& name, double value) { metrics_[name] = value; }

 private:
  Metrics RunEvaluation(Module& module, const data::LoaderOptions& options, const std::string& stage, double limit,
                        int64_t max_batches = -1);
  /// Loads the weights, and unless `weights_only` the optimizer, loop, callback, loader and RNG
  /// state to resume from.
  void LoadCheckpoint(Module& module, const std::string& path, bool weights_only = false);
  std::string ResolveCheckpoint(const std::string& ckpt_path) const;
  int64_t BatchLimit(double limit, int64_t available) const;
  /// A progress line; `done` (0..1) marks a step line, which a terminal redraws in place.
  void Progress(const std::string& line, double done = -1) const;
  void ClearProgress() const;

  TrainerOptions options_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  void AdvanceSchedule(const std::string& interval);
  void ApplySchedule();
  double LrScale() const;
  /// Sums of (value x count, count) per metric, added up across ranks; the names must agree.
  void ReduceSums(std::map<std::string, std::pair<double, int64_t>>& sums, const std::string& what);
  /// Once per optimizer step across ranks: any rank's stop stops all, and step metrics become
  /// their mean over ranks.
  void SyncStep(Metrics& step_values);
  data::LoaderOptions Shard(data::LoaderOptions options, bool evaluation) const;

  Module* module_ = nullptr;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::optional<ScheduleOptions> schedule_;
  std::vector<double> base_lrs_;
  int64_t schedule_t_ = 0;      // the schedule's position
  int64_t schedule_ticks_ = 0;  // intervals since it last moved (for frequency)
  std::unique_ptr<data::Loader> train_loader_;
  std::unique_ptr<dist::GradientSync> grad_sync_;
  int64_t steps_per_epoch_ = 0;  // optimizer steps an epoch
  std::string weights_crc32_;
  int64_t epoch_ = 0;
  int64_t global_step_ = 0;
  int64_t batch_in_epoch_ = 0;
  Metrics metrics_;
  bool sanity_checking_ = false;
  bool resume_log_ = false;
  mutable bool transient_ = false;  // a step line is on the terminal, to be cleared
  double input_wait_share_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace shoal::train
