// Tracks a training run in the tracking store (track/), on rank 0 only: hyperparameters as
// params, step metrics every log_every_n_steps, each epoch's metrics, system information and the
// input tables (with their Delta versions) as tags, checkpoints as artifacts. A resumed fit
// continues the same tracking run.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "train/callbacks.h"

namespace shoal::track {
class Tracker;
}

namespace shoal::train {

struct TrackingOptions {
  std::string experiment = "Default";
  std::string run_name;
  std::map<std::string, std::string> tags;  ///< lineage and the like, set at the run's start
};

class TrackingCallback : public Callback {
 public:
  TrackingCallback(std::shared_ptr<track::Tracker> tracker, TrackingOptions options);
  std::string name() const override { return "TrackingCallback"; }
  void on_fit_start(Trainer& trainer) override;
  void on_train_batch_end(Trainer& trainer, const Metrics& step_metrics) override;
  void on_train_epoch_end(Trainer& trainer) override;
  void on_fit_end(Trainer& trainer) override;
  nlohmann::json state_dict() const override;
  void load_state_dict(const nlohmann::json& state) override;

  /// The tracking run's id (empty before fit, and on ranks other than 0).
  std::string run_id() const;

 private:
  std::shared_ptr<track::Tracker> tracker_;
  TrackingOptions options_;
  std::string resume_run_id_;
};

}  // namespace shoal::train
