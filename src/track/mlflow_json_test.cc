#include "track/mlflow_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace shoal::track {
namespace {

using nlohmann::json;

std::string Written(const Run& r) {
  std::string out;
  AppendJson(out, r);
  return out;
}

TEST(MlflowJsonTest, AppendJsonWritesWhatToJsonDumps) {
  track::Run r;
  r.info.run_id = "0123456789abcdef0123456789abcdef";
  r.info.experiment_id = "3";
  r.info.run_name = "quote \" backslash \\ tab \t newline \n bell \x07 é 東京 🙂";
  r.info.status = "FINISHED";
  r.info.start_time = 1700000000123;
  r.info.end_time = 1700000009999;
  r.info.artifact_uri = "/tmp/a/3/x/artifacts";
  r.params = {{"lr", "0.01"}, {"empty", ""}, {"ctl", std::string("\x01\x1f", 2)}};
  r.tags = {{"mlflow.note", "line1\r\nline2"}, {"slash", "a/b"}};
  const double values[] = {0, -0.0, 1, -1, 0.1, 1.0 / 3, 1e-5, 1e-7, 123456789.0, 1e20, 1e21, 1e300, 5e-324,
                           std::numeric_limits<double>::max(), -2.5e-8, NAN, INFINITY, -INFINITY};
  int step = 0;
  for (double v : values) r.metrics.push_back({"m" + std::to_string(step), v, 1700000000000 + step, step++});
  EXPECT_EQ(Written(r), ToJson(r).dump());

  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> uniform(-1e6, 1e6);
  for (int k = 0; k < 2000; ++k) {
    track::Run one;
    one.info.run_id = "x";
    double v = uniform(random);
    if (k % 3 == 0) v = std::ldexp(v, static_cast<int>(random() % 200) - 100);
    one.metrics.push_back({"v", v, 0, 0});
    // Grisu2 in nlohmann::json now and then writes one digit more than the shortest form; both
    // read back as the same double.
    const json back = json::parse(Written(one));
    ASSERT_EQ(back["data"]["metrics"][0]["value"].get<double>(), v) << Written(one);
    ASSERT_EQ(back, ToJson(one)) << v;
  }
  r.info.end_time = 0;  // a running run has no end_time field
  EXPECT_EQ(Written(r), ToJson(r).dump());
}

TEST(MlflowJsonTest, MalformedUtf8BecomesReplacementCharacters) {
  track::Run r;
  r.info.run_name = "ok \xC3\xA9 bad \xC3 \xE0\x80\x80 \xED\xA0\x80 \xF4\x90\x80\x80 \xFF end";
  const std::string text = Written(r);
  const json parsed = json::parse(text);  // valid JSON and valid UTF-8
  const std::string name = parsed["info"]["run_name"];
  EXPECT_EQ(name.substr(0, 10), "ok \xC3\xA9 bad ");
  EXPECT_NE(name.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_EQ(name.substr(name.size() - 4), " end");
  EXPECT_EQ(ToJson(r).dump(-1, ' ', false, json::error_handler_t::replace), text);
}

}  // namespace
}  // namespace shoal::track
