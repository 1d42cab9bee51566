#include "track/tracker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "util/error.h"

namespace shoal::track {
namespace {

namespace fs = std::filesystem;

TEST(TrackerTest, MetricsLoggedAsynchronouslyAreAllStoredAtRunEnd) {
  fs::path dir = fs::temp_directory_path() / ("shoal_tracker_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto store = std::shared_ptr<Store>(Store::Open(dir.string()));
  std::string run;
  {
    Tracker tracker(store, /*queue_limit=*/64);  // small: LogMetric meets backpressure
    run = tracker.StartRun("exp", "r1", {{"source", "test"}});
    tracker.LogParams({{"lr", "0.1"}, {"batch", "32"}});
    std::map<std::string, std::string> many;  // more than one batch holds (100)
    for (int i = 0; i < 250; ++i) many["tag." + std::to_string(i)] = std::to_string(i);
    tracker.SetTags(many);
    std::thread other([&] {
      for (int i = 0; i < 2500; ++i) tracker.LogMetric("b", i, i);
    });
    for (int i = 0; i < 2500; ++i) tracker.LogMetric("a", i * 0.5, i);
    other.join();
    tracker.EndRun();
    EXPECT_THROW(tracker.LogMetric("a", 1, 1), Error);  // no run
  }
  track::Run r = store->GetRun(run);
  EXPECT_EQ(r.info.status, "FINISHED");
  EXPECT_EQ(r.params.at("batch"), "32");
  EXPECT_EQ(r.tags.at("tag.249"), "249");
  EXPECT_EQ(std::count_if(r.tags.begin(), r.tags.end(), [](const auto& kv) { return kv.first.rfind("tag.", 0) == 0; }), 250);
  EXPECT_EQ(store->GetMetricHistory(run, "a").size(), 2500u);
  EXPECT_EQ(store->GetMetricHistory(run, "b").size(), 2500u);
  ASSERT_EQ(r.metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(r.metrics[0].value, 1249.5);
  EXPECT_EQ(store->GetExperimentByName("exp").experiment_id, r.info.experiment_id);
  fs::remove_all(dir);
}

TEST(TrackerTest, ARunNotEndedEndsFailed) {
  fs::path dir = fs::temp_directory_path() / ("shoal_tracker2_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto store = std::shared_ptr<Store>(Store::Open(dir.string()));
  std::string run;
  {
    Tracker tracker(store);
    run = tracker.StartRun("exp");
    tracker.LogMetric("loss", 1.0, 0);
  }
  EXPECT_EQ(store->GetRun(run).info.status, "FAILED");
  EXPECT_EQ(store->GetMetricHistory(run, "loss").size(), 1u);  // flushed before it ended
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shoal::track
