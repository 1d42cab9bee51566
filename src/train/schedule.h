// Learning-rate schedules: step, multistep, cosine and one-cycle, with an optional linear warmup in
// front, as closed forms of the schedule position (so a resumed run needs only that position).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shoal::train {

struct ScheduleOptions {
  std::string name = "none";          ///< none, step, multistep, cosine, onecycle
  std::string interval = "epoch";     ///< epoch or step: what advances the schedule
  int frequency = 1;                  ///< advance once every this many intervals
  std::string monitor;                ///< kept for Lightning's config shape; schedules here ignore it
  int64_t step_size = 10;             ///< step: decay every step_size positions
  double gamma = 0.1;                 ///< step, multistep: decay factor
  std::vector<int64_t> milestones;    ///< multistep
  int64_t t_max = 10;                 ///< cosine: positions to the minimum
  double eta_min = 0.0;               ///< cosine: the minimum learning rate
  double max_lr = 0.0;                ///< onecycle: the peak (0: the optimizer's lr)
  int64_t total_steps = 0;            ///< onecycle: positions in the cycle
  double pct_start = 0.3;             ///< onecycle: share of the cycle spent rising
  double div_factor = 25.0;           ///< onecycle: initial lr = max_lr / div_factor
  double final_div_factor = 1e4;      ///< onecycle: final lr = initial lr / final_div_factor
  int64_t warmup = 0;                 ///< positions of linear warmup before the schedule
  double warmup_start_factor = 0.01;  ///< warmup starts at this share of the lr
};

/// The learning rate at schedule position `t` for a base learning rate `base`. Throws
/// InvalidError for an unknown name or options that make no schedule.
double ScheduledLr(const ScheduleOptions& options, double base, int64_t t);

/// Checks the options; throws InvalidError naming what is wrong.
void ValidateSchedule(const ScheduleOptions& options);

}  // namespace shoal::train
