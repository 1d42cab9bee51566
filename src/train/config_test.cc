#include "train/config.h"

#include <gtest/gtest.h>

#include "train/run.h"
#include "util/error.h"

namespace shoal::train {
namespace {

TEST(ConfigTest, ParsesTheYamlConfigsUse) {
  nlohmann::json c = ParseYaml(R"(# a run
model:
  name: simple_cnn   # the baseline
  hidden: [256, 128]
data:
  root: "./shoal-data"
  val_where: 'id >= 54000'
  flip: false
trainer:
  max_epochs: 12
  gradient_clip_val: 0.5
  ckpt_path:
tags:
  - fashion
  - cnn
)",
                               "run.yaml");
  EXPECT_EQ(c["model"]["name"], "simple_cnn");
  EXPECT_EQ(c["model"]["hidden"], nlohmann::json({256, 128}));
  EXPECT_EQ(c["data"]["root"], "./shoal-data");
  EXPECT_EQ(c["data"]["val_where"], "id >= 54000");
  EXPECT_EQ(c["data"]["flip"], false);
  EXPECT_EQ(c["trainer"]["max_epochs"], 12);
  EXPECT_DOUBLE_EQ(c["trainer"]["gradient_clip_val"].get<double>(), 0.5);
  EXPECT_TRUE(c["trainer"]["ckpt_path"].is_null());
  EXPECT_EQ(c["tags"], nlohmann::json({"fashion", "cnn"}));
}

TEST(ConfigTest, BadYamlNamesTheLine) {
  try {
    ParseYaml("model:\n  name: x\n    extra: 1\n", "bad.yaml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml line 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ParseYaml("a: 1\na: 2\n", "dup.yaml"), Error);
  EXPECT_THROW(ParseYaml("just a line\n", "x.yaml"), Error);
}

TEST(ConfigTest, DottedOverridesSetValuesAndSections) {
  nlohmann::json c = {{"trainer", {{"max_epochs", 10}}}};
  ApplyOverrides(c, {"--trainer.max_epochs=5", "--data.root=/tmp/x", "optimizer.lr=0.1", "--trainer.fast_dev_run=true"});
  EXPECT_EQ(c["trainer"]["max_epochs"], 5);
  EXPECT_EQ(c["data"]["root"], "/tmp/x");
  EXPECT_DOUBLE_EQ(c["optimizer"]["lr"].get<double>(), 0.1);
  EXPECT_EQ(c["trainer"]["fast_dev_run"], true);
  ApplyOverrides(c, {"--model.hidden=[64, 32]", "--model.empty=[]"});
  EXPECT_EQ(c["model"]["hidden"], nlohmann::json::parse("[64, 32]"));
  EXPECT_EQ(c["model"]["empty"], nlohmann::json::array());
  EXPECT_THROW(ApplyOverrides(c, {"--trainer.max_epochs"}), Error);
  EXPECT_THROW(ApplyOverrides(c, {"--trainer.max_epochs.x=1"}), Error);
}

TEST(ConfigTest, UnknownKeysAreErrorsNamingThem) {
  nlohmann::json resolved = ResolveConfig({{"trainer", {{"max_epochs", 3}}}});
  EXPECT_EQ(resolved["trainer"]["max_epochs"], 3);
  EXPECT_EQ(resolved["optimizer"]["name"], "adam");
  try {
    ResolveConfig({{"trainer", {{"max_epoch", 3}}}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown config key 'trainer.max_epoch'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shoal::train
