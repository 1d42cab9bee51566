#include "train/tracking_callback.h"

#include <torch/version.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "track/tracker.h"
#include "train/trainer.h"

namespace shoal::train {

TrackingCallback::TrackingCallback(std::shared_ptr<track::Tracker> tracker, TrackingOptions options)
    : tracker_(std::move(tracker)), options_(std::move(options)) {}

std::string TrackingCallback::run_id() const { return tracker_->run_id(); }

void TrackingCallback::on_fit_start(Trainer& trainer) {
  if (!trainer.is_global_zero() || !tracker_->run_id().empty()) return;
  std::map<std::string, std::string> tags = options_.tags;
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  tags["mlflow.source.name"] = "shoal train";
  tags["shoal.host"] = host;
  tags["shoal.cpus"] = std::to_string(std::thread::hardware_concurrency());
  tags["shoal.world_size"] = std::to_string(trainer.world_size());
  tags["shoal.libtorch"] = TORCH_VERSION;
  bool resumed = false;
  if (!resume_run_id_.empty()) {
    try {
      tracker_->ResumeRun(resume_run_id_);
      resumed = true;
    } catch (const std::exception&) {
      // The checkpoint came from another store: a new run.
    }
  }
  if (!resumed) tracker_->StartRun(options_.experiment, options_.run_name, {});
  tracker_->SetTags(tags);
  std::map<std::string, std::string> params;
  for (const auto& [k, v] : trainer.options().hyper_parameters) params[k] = v.substr(0, track::kMaxParamValueLength);
  if (resumed) {
    // Params are immutable: a resumed job's settings that changed (ckpt_path, max_epochs ...)
    // are kept as tags "resumed.<key>" instead.
    std::map<std::string, std::string> changed;
    const track::Run run = tracker_->GetRun();
    for (auto it = params.begin(); it != params.end();) {
      auto old = run.params.find(it->first);
      if (old == run.params.end()) {
        ++it;
        continue;
      }
      if (old->second != it->second) changed["resumed." + it->first] = it->second.substr(0, track::kMaxTagValueLength);
      it = params.erase(it);
    }
    if (!changed.empty()) tracker_->SetTags(changed);
  }
  tracker_->LogParams(params);
}

void TrackingCallback::on_train_batch_end(Trainer& trainer, const Metrics& step_metrics) {
  if (tracker_->run_id().empty() || trainer.global_step() % trainer.options().log_every_n_steps != 0) return;
  for (const auto& [k, v] : step_metrics) tracker_->LogMetric(k + "_step", v, trainer.global_step());
}

void TrackingCallback::on_train_epoch_end(Trainer& trainer) {
  if (tracker_->run_id().empty()) return;
  for (const auto& [k, v] : trainer.callback_metrics()) tracker_->LogMetric(k, v, trainer.global_step());
  tracker_->LogMetric("epoch", static_cast<double>(trainer.current_epoch()), trainer.global_step());
}

void TrackingCallback::on_fit_end(Trainer& trainer) {
  if (tracker_->run_id().empty()) return;
  tracker_->Flush();
  for (const std::string& path : {trainer.best_model_path(), trainer.last_model_path()}) {
    if (!path.empty() && std::filesystem::exists(path)) tracker_->LogArtifact(path, "checkpoints");
  }
}

nlohmann::json TrackingCallback::state_dict() const { return {{"run_id", tracker_->run_id()}}; }

void TrackingCallback::load_state_dict(const nlohmann::json& state) {
  resume_run_id_ = state.value("run_id", std::string());
}

}  // namespace shoal::train
