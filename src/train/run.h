// `shoal train`, `shoal test` and `shoal predict` from a configuration: a classifier from the model
// zoo, loaders over Delta tables, the Trainer with its callbacks.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace shoal::train {

/// The configuration with every default filled in (sections model, data, optimizer, trainer,
/// callbacks). Throws InvalidError for unknown sections or keys, naming them.
nlohmann::json ResolveConfig(const nlohmann::json& config);

/// Trains (resuming from trainer.ckpt_path when set), then tests the best checkpoint on the test
/// table. Returns the final metrics and the checkpoint path. Started by a launcher (shoal launch,
/// torchrun, mpirun, Slurm, SageMaker), it trains data-parallel with the other ranks; a restarted
/// job resumes from the last checkpoint it wrote. Ranks other than 0 return null.
nlohmann::json RunTrain(const nlohmann::json& config);

/// Tests the checkpoint `ckpt` on the config's test table.
nlohmann::json RunTest(const nlohmann::json& config, const std::string& ckpt);

/// Predicts the classes of `table`'s rows with `ckpt` and writes them as a new Delta table `out`
/// (columns id, prediction, and label when the input has one).
nlohmann::json RunPredict(const nlohmann::json& config, const std::string& ckpt, const std::string& table,
                          const std::string& out);

}  // namespace shoal::train
