#include "track/mlflow_json.h"

#include <charconv>
#include <cmath>

namespace shoal::track {

using nlohmann::json;

json MetricValueJson(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

std::optional<double> MetricValueFromJson(const json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s == "NaN") return NAN;
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
  }
  return std::nullopt;
}

json KeyValueList(const std::map<std::string, std::string>& m) {
  json out = json::array();
  for (const auto& [k, v] : m) out.push_back({{"key", k}, {"value", v}});
  return out;
}

namespace {

// A JSON string: quotes, backslashes and control characters escaped as nlohmann::json's dump()
// does; well-formed UTF-8 kept, each byte of a malformed sequence replaced by U+FFFD.
void AppendString(std::string& out, const std::string& s) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            static const char* hex = "0123456789abcdef";
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // The length of a well-formed sequence starting here, or 0 (RFC 3629: no overlongs, no
    // surrogates, nothing above U+10FFFF).
    size_t len = 0;
    auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) { return i + k < n && p[i + k] >= lo && p[i + k] <= hi; };
    if (c >= 0xC2 && c <= 0xDF) {
      len = cont(1) ? 2 : 0;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
      len = cont(1, lo, hi) && cont(2) ? 3 : 0;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
      len = cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
    }
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  out += '"';
}

void AppendNumber(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "\"NaN\"";
  } else if (std::isinf(v)) {
    out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    // The shortest round-trip digits, laid out as nlohmann::json does: fixed notation for
    // decimal exponents from -4 to 15 (integral values end in ".0"), else d.ddde+XX.
    char buffer[64];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v, std::chars_format::scientific);
    std::string_view sci(buffer, static_cast<size_t>(end - buffer));
    if (sci.front() == '-') {
      out += '-';
      sci.remove_prefix(1);
    }
    const size_t e = sci.find('e');
    std::string digits(sci.substr(0, e));
    if (digits.size() > 1) digits.erase(1, 1);  // "d.ddd" -> "dddd"
    const int k = static_cast<int>(digits.size());
    const int n = std::stoi(std::string(sci.substr(e + 1))) + 1;  // the decimal point sits after n digits
    if (k <= n && n <= 15) {
      out += digits;
      out.append(static_cast<size_t>(n - k), '0');
      out += ".0";
    } else if (0 < n && n <= 15) {
      out.append(digits, 0, static_cast<size_t>(n));
      out += '.';
      out.append(digits, static_cast<size_t>(n), std::string::npos);
    } else if (-4 < n && n <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-n), '0');
      out += digits;
    } else {
      out += digits[0];
      if (k > 1) {
        out += '.';
        out.append(digits, 1, std::string::npos);
      }
      const int x = n - 1;
      out += x < 0 ? "e-" : "e+";
      const std::string exp = std::to_string(std::abs(x));
      if (exp.size() < 2) out += '0';
      out += exp;
    }
  }
}

void AppendField(std::string& out, const char* key, const std::string& value, bool comma = true) {
  if (comma) out += ',';
  out += '"';
  out += key;
  out += "\":";
  AppendString(out, value);
}

void AppendField(std::string& out, const char* key, int64_t value) {
  out += ",\"";
  out += key;
  out += "\":";
  out += std::to_string(value);
}

void AppendKeyValues(std::string& out, const char* field, const std::map<std::string, std::string>& m) {
  out += ",\"";
  out += field;
  out += "\":[";
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out += ',';
    first = false;
    out += '{';
    AppendField(out, "key", k, false);
    AppendField(out, "value", v);
    out += '}';
  }
  out += ']';
}

}  // namespace

// Keys in the order nlohmann::json sorts them, so the bytes equal ToJson(r).dump().
void AppendJson(std::string& out, const Run& r) {
  out += "{\"data\":{\"metrics\":[";
  bool first = true;
  for (const Metric& m : r.metrics) {
    if (!first) out += ',';
    first = false;
    out += '{';
    AppendField(out, "key", m.key, false);
    AppendField(out, "step", m.step);
    AppendField(out, "timestamp", m.timestamp);
    out += ",\"value\":";
    AppendNumber(out, m.value);
    out += '}';
  }
  out += ']';
  AppendKeyValues(out, "params", r.params);
  AppendKeyValues(out, "tags", r.tags);
  out += "},\"info\":{";
  AppendField(out, "artifact_uri", r.info.artifact_uri, false);
  if (r.info.end_time > 0) AppendField(out, "end_time", r.info.end_time);
  AppendField(out, "experiment_id", r.info.experiment_id);
  AppendField(out, "lifecycle_stage", r.info.lifecycle_stage);
  AppendField(out, "run_id", r.info.run_id);
  AppendField(out, "run_name", r.info.run_name);
  AppendField(out, "run_uuid", r.info.run_id);
  AppendField(out, "start_time", r.info.start_time);
  AppendField(out, "status", r.info.status);
  AppendField(out, "user_id", r.info.user_id);
  out += "}}";
}

json ToJson(const Experiment& e) {
  return {{"experiment_id", e.experiment_id},   {"name", e.name},
          {"artifact_location", e.artifact_location}, {"lifecycle_stage", e.lifecycle_stage},
          {"creation_time", e.creation_time},   {"last_update_time", e.last_update_time},
          {"tags", KeyValueList(e.tags)}};
}

json ToJson(const Metric& m) {
  return {{"key", m.key}, {"value", MetricValueJson(m.value)}, {"timestamp", m.timestamp}, {"step", m.step}};
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
  return {{"info", ToJson(r.info)}, {"data", {{"metrics", metrics}, {"params", KeyValueList(r.params)}, {"tags", KeyValueList(r.tags)}}}};
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
