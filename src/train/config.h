// Run configurations: a YAML subset read into JSON, and dotted command-line overrides.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shoal::train {

/// Parses the YAML that configs use: nested mappings by indentation, "- item" lists, flow lists
/// "[a, b]", scalars (integers, floats, true/false, null, quoted or plain strings) and # comments.
/// Anchors, multi-line strings and flow mappings are not supported. Throws InvalidError naming
/// `name` and the line.
nlohmann::json ParseYaml(const std::string& text, const std::string& name);

/// A scalar as YAML reads it: a number, a boolean, null, or a string.
nlohmann::json ParseScalar(const std::string& text);

/// Applies overrides "--a.b=value" (or "a.b=value") to `config`, creating sections as needed.
/// Throws InvalidError for an override without "=" or a path through a non-mapping.
void ApplyOverrides(nlohmann::json& config, const std::vector<std::string>& overrides);

}  // namespace shoal::train
