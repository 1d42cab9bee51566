// The tracking store's objects in MLflow's JSON shapes (its REST API 2.0 and protos): shared by
// the server and the command line.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>

#include "track/store.h"

namespace shoal::track {

/// A metric value as MLflow writes it: a number, or "NaN", "Infinity", "-Infinity" (JSON has no
/// literal for them); and back (nullopt for anything else).
nlohmann::json MetricValueJson(double value);
std::optional<double> MetricValueFromJson(const nlohmann::json& value);
/// [{"key", "value"}, ...], MLflow's form for params and tags.
nlohmann::json KeyValueList(const std::map<std::string, std::string>& m);

nlohmann::json ToJson(const Experiment& e);
nlohmann::json ToJson(const Metric& m);
nlohmann::json ToJson(const RunInfo& r);
nlohmann::json ToJson(const Run& r);
nlohmann::json ToJson(const ModelVersion& v);
nlohmann::json ToJson(const RegisteredModel& m);

/// Appends the JSON of ToJson(r).dump() to `out`, written directly: runs/search sends pages of
/// 1000 runs, and building them as JSON trees first costs more than the query. The same bytes,
/// except that numbers take the shortest digits that read back exactly; invalid UTF-8 becomes
/// U+FFFD.
void AppendJson(std::string& out, const Run& r);

}  // namespace shoal::track
