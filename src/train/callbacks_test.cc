#include "train/callbacks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "util/error.h"

namespace shoal::train {
namespace {

// Feeds values to a fresh EarlyStopping; returns the 1-based index at which it says stop (0: never).
int StopsAt(EarlyStoppingOptions options, const std::vector<double>& values, std::string* reason = nullptr) {
  EarlyStopping stopping(options);
  for (size_t i = 0; i < values.size(); ++i) {
    auto [stop, why] = stopping.Evaluate(values[i]);
    if (stop) {
      if (reason) *reason = why;
      return static_cast<int>(i + 1);
    }
  }
  return 0;
}

TEST(EarlyStoppingTest, PatienceCountsChecksWithoutImprovement) {
  EarlyStoppingOptions o;
  o.patience = 3;
  EXPECT_EQ(StopsAt(o, {1.0, 0.9, 0.95, 0.95, 0.95, 0.1}), 5);
  EXPECT_EQ(StopsAt(o, {1.0, 0.9, 0.95, 0.8, 0.95, 0.95}), 0);  // improvement resets the count
  o.patience = 0;  // Lightning: the first check without improvement stops
  EXPECT_EQ(StopsAt(o, {1.0, 1.0}), 2);
}

TEST(EarlyStoppingTest, MinDeltaIsTheImprovementThatCounts) {
  EarlyStoppingOptions o;
  o.patience = 2;
  o.min_delta = 0.01;
  EXPECT_EQ(StopsAt(o, {1.0, 0.995, 0.992}), 3);  // 0.008 better in all: not enough
  EXPECT_EQ(StopsAt(o, {1.0, 0.985, 0.97, 0.955}), 0);
  o.min_delta = -0.01;  // the sign is ignored, as in Lightning
  EXPECT_EQ(StopsAt(o, {1.0, 0.995, 0.992}), 3);
  o.mode = "max";
  o.min_delta = 0.01;
  EXPECT_EQ(StopsAt(o, {0.5, 0.505, 0.509}), 3);
  EXPECT_EQ(StopsAt(o, {0.5, 0.52, 0.54}), 0);
}

TEST(EarlyStoppingTest, ThresholdsAndNonFiniteValuesStopInLightningsOrder) {
  EarlyStoppingOptions o;
  o.patience = 10;
  o.min_delta = 0.01;
  o.stopping_threshold = 0.55;  // the seed article's settings
  std::string reason;
  EXPECT_EQ(StopsAt(o, {0.9, 0.7, 0.56, 0.54}, &reason), 4);
  EXPECT_NE(reason.find("Stopping threshold reached"), std::string::npos) << reason;
  o.stopping_threshold.reset();
  o.divergence_threshold = 3.0;
  EXPECT_EQ(StopsAt(o, {1.0, 2.0, 3.5}, &reason), 3);
  EXPECT_NE(reason.find("Divergence threshold reached"), std::string::npos) << reason;
  EXPECT_EQ(StopsAt(o, {1.0, std::nan("")}, &reason), 2);
  EXPECT_NE(reason.find("is not finite"), std::string::npos) << reason;
  o.check_finite = false;  // NaN then counts as no improvement
  EXPECT_EQ(StopsAt(o, {1.0, std::nan(""), 0.5}), 0);
  // Finite check before the threshold: +inf is "not finite", not "diverged".
  o.check_finite = true;
  EXPECT_EQ(StopsAt(o, {1.0, std::numeric_limits<double>::infinity()}, &reason), 2);
  EXPECT_NE(reason.find("is not finite"), std::string::npos) << reason;
}

TEST(EarlyStoppingTest, StateRoundTrips) {
  EarlyStoppingOptions o;
  o.patience = 3;
  EarlyStopping a(o);
  a.Evaluate(1.0);
  a.Evaluate(1.5);
  EarlyStopping b(o);
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.wait_count(), 1);
  EXPECT_DOUBLE_EQ(b.best_score(), 1.0);
  EXPECT_FALSE(b.Evaluate(1.2).first);
  EXPECT_TRUE(b.Evaluate(1.2).first);  // the third check without improvement
  EarlyStoppingOptions sideways;
  sideways.mode = "sideways";
  EXPECT_THROW(EarlyStopping{sideways}, Error);
}

TEST(ModelCheckpointTest, FileNamesFollowTheTemplate) {
  ModelCheckpointOptions o;
  o.filename = "{epoch}-{val_loss:.2f}";
  ModelCheckpoint c(o);
  EXPECT_EQ(c.FormatName({{"val_loss", 0.2468}}, 3, 120), "epoch=3-val_loss=0.25.ckpt");
  o.filename = "model-{step:05d}-{val_acc:.3f}";
  EXPECT_EQ(ModelCheckpoint(o).FormatName({{"val_acc", 0.91}}, 0, 42), "model-step=00042-val_acc=0.910.ckpt");
  EXPECT_THROW(c.FormatName({{"train_loss", 1}}, 0, 0), Error);  // val_loss is not logged
}

TEST(ModelCheckpointTest, KeepsTheTopKByTheMonitor) {
  ModelCheckpointOptions o;
  o.monitor = "val_loss";
  o.save_top_k = 2;
  ModelCheckpoint c(o);
  auto a = c.Consider("a", 0.5);
  EXPECT_TRUE(a.save);
  EXPECT_TRUE(a.remove.empty());
  EXPECT_TRUE(c.Consider("b", 0.4).save);
  EXPECT_FALSE(c.Consider("c", 0.6).save);  // worse than both kept
  auto d = c.Consider("d", 0.3);
  EXPECT_TRUE(d.save);
  EXPECT_EQ(d.remove, std::vector<std::string>{"a"});
  EXPECT_EQ(c.best_model_path(), "d");
  EXPECT_DOUBLE_EQ(*c.best_model_score(), 0.3);
  EXPECT_EQ(c.best_k_models().size(), 2u);
  // Mode max keeps the largest; save_top_k -1 keeps all.
  o.mode = "max";
  o.save_top_k = -1;
  ModelCheckpoint all(o);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(all.Consider("m" + std::to_string(i), i * 0.1).remove.empty());
  EXPECT_EQ(all.best_model_path(), "m4");
  o.save_top_k = 0;
  EXPECT_FALSE(ModelCheckpoint(o).Consider("x", 1.0).save);
}

TEST(ModelCheckpointTest, WithoutAMonitorKeepsTheLatest) {
  ModelCheckpointOptions o;
  ModelCheckpoint c(o);
  EXPECT_TRUE(c.Consider("e0", std::nullopt).remove.empty());
  EXPECT_EQ(c.Consider("e1", std::nullopt).remove, std::vector<std::string>{"e0"});
  EXPECT_EQ(c.best_model_path(), "e1");
  o.save_top_k = 3;  // ranking needs a monitor
  EXPECT_THROW(ModelCheckpoint{o}, Error);
}

}  // namespace
}  // namespace shoal::train
