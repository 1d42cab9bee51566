// The tracking store's objects in MLflow's JSON shapes (its REST API 2.0 and protos): shared by
// the server and the command line.
#pragma once

#include <nlohmann/json.hpp>

#include "track/store.h"

namespace shoal::track {

nlohmann::json ToJson(const Experiment& e);
nlohmann::json ToJson(const Metric& m);
nlohmann::json ToJson(const RunInfo& r);
nlohmann::json ToJson(const Run& r);
nlohmann::json ToJson(const ModelVersion& v);
nlohmann::json ToJson(const RegisteredModel& m);

}  // namespace shoal::track
