#include "train/schedule.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace shoal::train {
namespace {

TEST(ScheduleTest, StepMultistepAndCosineMatchPyTorchsFormulas) {
  ScheduleOptions step;
  step.name = "step";
  step.step_size = 2;
  step.gamma = 0.1;
  EXPECT_DOUBLE_EQ(ScheduledLr(step, 1.0, 0), 1.0);
  EXPECT_DOUBLE_EQ(ScheduledLr(step, 1.0, 1), 1.0);
  EXPECT_NEAR(ScheduledLr(step, 1.0, 2), 0.1, 1e-12);
  EXPECT_NEAR(ScheduledLr(step, 1.0, 5), 0.01, 1e-12);
  ScheduleOptions multi;
  multi.name = "multistep";
  multi.milestones = {2, 5};
  multi.gamma = 0.5;
  EXPECT_DOUBLE_EQ(ScheduledLr(multi, 0.4, 1), 0.4);
  EXPECT_DOUBLE_EQ(ScheduledLr(multi, 0.4, 2), 0.2);
  EXPECT_DOUBLE_EQ(ScheduledLr(multi, 0.4, 7), 0.1);
  ScheduleOptions cosine;
  cosine.name = "cosine";
  cosine.t_max = 10;
  cosine.eta_min = 0.0;
  EXPECT_NEAR(ScheduledLr(cosine, 1.0, 5), 0.5, 1e-12);
  EXPECT_NEAR(ScheduledLr(cosine, 1.0, 10), 0.0, 1e-12);
  EXPECT_NEAR(ScheduledLr(cosine, 1.0, 12), 0.0, 1e-12);  // stays at the minimum
}

TEST(ScheduleTest, OneCycleRisesThenFallsAndWarmupLeadsIn) {
  ScheduleOptions one;
  one.name = "onecycle";
  one.total_steps = 10;
  one.max_lr = 1.0;
  EXPECT_NEAR(ScheduledLr(one, 0.1, 0), 1.0 / 25, 1e-12);  // max_lr / div_factor
  EXPECT_NEAR(ScheduledLr(one, 0.1, 2), 1.0, 1e-12);       // the peak at pct_start
  EXPECT_NEAR(ScheduledLr(one, 0.1, 9), 1.0 / 25 / 1e4, 1e-12);
  EXPECT_GT(ScheduledLr(one, 0.1, 4), ScheduledLr(one, 0.1, 6));
  ScheduleOptions warm;
  warm.name = "cosine";
  warm.t_max = 4;
  warm.warmup = 4;
  warm.warmup_start_factor = 0.25;
  EXPECT_DOUBLE_EQ(ScheduledLr(warm, 1.0, 0), 0.25);
  EXPECT_DOUBLE_EQ(ScheduledLr(warm, 1.0, 2), 0.625);
  EXPECT_DOUBLE_EQ(ScheduledLr(warm, 1.0, 4), 1.0);  // the cosine starts after the warmup
  EXPECT_NEAR(ScheduledLr(warm, 1.0, 6), 0.5, 1e-12);
}

TEST(ScheduleTest, BadOptionsAreErrors) {
  ScheduleOptions o;
  o.name = "exponential";
  EXPECT_THROW(ValidateSchedule(o), Error);
  o.name = "onecycle";
  EXPECT_THROW(ValidateSchedule(o), Error);  // no total_steps
  o.name = "step";
  o.interval = "batch";
  EXPECT_THROW(ValidateSchedule(o), Error);
}

}  // namespace
}  // namespace shoal::train
