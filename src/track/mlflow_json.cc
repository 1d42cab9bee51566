#include "track/mlflow_json.h"

#include <cmath>

namespace shoal::track {

using nlohmann::json;

namespace {

json KeyValues(const std::map<std::string, std::string>& m) {
  json out = json::array();
  for (const auto& [k, v] : m) out.push_back({{"key", k}, {"value", v}});
  return out;
}

}  // namespace

json ToJson(const Experiment& e) {
  return {{"experiment_id", e.experiment_id},   {"name", e.name},
          {"artifact_location", e.artifact_location}, {"lifecycle_stage", e.lifecycle_stage},
          {"creation_time", e.creation_time},   {"last_update_time", e.last_update_time},
          {"tags", KeyValues(e.tags)}};
}

json ToJson(const Metric& m) {
  // MLflow writes NaN and infinities as strings in JSON.
  json value = std::isnan(m.value) ? json("NaN") : std::isinf(m.value) ? json(m.value > 0 ? "Infinity" : "-Infinity") : json(m.value);
  return {{"key", m.key}, {"value", value}, {"timestamp", m.timestamp}, {"step", m.step}};
}

json ToJson(const RunInfo& r) {
  json out = {{"run_id", r.run_id},
              {"run_uuid", r.run_id},
              {"run_name", r.run_name},
              {"experiment_id", r.experiment_id},
              {"user_id", r.user_id},
              {"status", r.status},
              {"start_time", r.start_time},
              {"artifact_uri", r.artifact_uri},
              {"lifecycle_stage", r.lifecycle_stage}};
  if (r.end_time > 0) out["end_time"] = r.end_time;
  return out;
}

json ToJson(const Run& r) {
  json metrics = json::array();
  for (const Metric& m : r.metrics) metrics.push_back(ToJson(m));
  return {{"info", ToJson(r.info)}, {"data", {{"metrics", metrics}, {"params", KeyValues(r.params)}, {"tags", KeyValues(r.tags)}}}};
}

json ToJson(const ModelVersion& v) {
  return {{"name", v.name},
          {"version", v.version},
          {"creation_timestamp", v.creation_timestamp},
          {"last_updated_timestamp", v.last_updated_timestamp},
          {"description", v.description},
          {"source", v.source},
          {"run_id", v.run_id},
          {"status", v.status},
          {"current_stage", "None"},
          {"aliases", v.aliases}};
}

json ToJson(const RegisteredModel& m) {
  json versions = json::array(), aliases = json::array();
  for (const ModelVersion& v : m.latest_versions) versions.push_back(ToJson(v));
  for (const auto& [alias, version] : m.aliases) aliases.push_back({{"alias", alias}, {"version", version}});
  return {{"name", m.name},
          {"creation_timestamp", m.creation_timestamp},
          {"last_updated_timestamp", m.last_updated_timestamp},
          {"description", m.description},
          {"latest_versions", versions},
          {"aliases", aliases}};
}

}  // namespace shoal::track
