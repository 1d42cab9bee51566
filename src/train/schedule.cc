#include "train/schedule.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace shoal::train {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Cosine from `from` to `to` as `share` goes from 0 to 1.
double Anneal(double from, double to, double share) { return to + (from - to) * (1 + std::cos(kPi * share)) / 2; }

}  // namespace

void ValidateSchedule(const ScheduleOptions& o) {
  const std::string& n = o.name;
  if (n != "none" && n != "step" && n != "multistep" && n != "cosine" && n != "onecycle") {
    throw InvalidError("unknown scheduler '" + n + "' (known: none, step, multistep, cosine, onecycle)");
  }
  if (o.interval != "epoch" && o.interval != "step") throw InvalidError("scheduler interval must be epoch or step");
  if (o.frequency <= 0) throw InvalidError("scheduler frequency must be positive");
  if (n == "step" && o.step_size <= 0) throw InvalidError("step scheduler needs a positive step_size");
  if (n == "cosine" && o.t_max <= 0) throw InvalidError("cosine scheduler needs a positive t_max");
  if (n == "onecycle" && (o.total_steps <= 0 || o.pct_start <= 0 || o.pct_start >= 1)) {
    throw InvalidError("onecycle scheduler needs total_steps > 0 and 0 < pct_start < 1");
  }
  if (o.warmup < 0) throw InvalidError("scheduler warmup must not be negative");
}

double ScheduledLr(const ScheduleOptions& o, double base, int64_t t) {
  ValidateSchedule(o);
  if (t < 0) t = 0;
  if (t < o.warmup) {
    double share = static_cast<double>(t) / static_cast<double>(o.warmup);
    return base * (o.warmup_start_factor + (1 - o.warmup_start_factor) * share);
  }
  t -= o.warmup;
  if (o.name == "step") return base * std::pow(o.gamma, static_cast<double>(t / o.step_size));
  if (o.name == "multistep") {
    int64_t passed = std::count_if(o.milestones.begin(), o.milestones.end(), [&](int64_t m) { return m <= t; });
    return base * std::pow(o.gamma, static_cast<double>(passed));
  }
  if (o.name == "cosine") {
    return Anneal(base, o.eta_min, static_cast<double>(std::min(t, o.t_max)) / static_cast<double>(o.t_max));
  }
  if (o.name == "onecycle") {
    // PyTorch's OneCycleLR with cosine annealing: up from max/div to max over pct_start of the
    // cycle, then down to max/(div*final_div).
    const double peak = o.max_lr > 0 ? o.max_lr : base;
    const double initial = peak / o.div_factor, final_lr = initial / o.final_div_factor;
    const double up_end = o.pct_start * static_cast<double>(o.total_steps) - 1;
    const double down_end = static_cast<double>(o.total_steps) - 1;
    const double step = static_cast<double>(std::min(t, o.total_steps - 1));
    if (step <= up_end) return Anneal(initial, peak, up_end > 0 ? step / up_end : 1.0);
    return Anneal(peak, final_lr, (step - up_end) / std::max(down_end - up_end, 1.0));
  }
  return base;
}

}  // namespace shoal::train
