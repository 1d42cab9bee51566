// Internal to src/delta: reading the JSON-lines files of the log.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace shoal::delta {

/// Calls on_line(action, line_number) for each non-blank line of the JSON-lines file at `path`
/// (a commit, or a V2 checkpoint). A line that is not valid JSON is passed as a discarded value
/// (action.is_discarded()): the caller decides whether that is an error. Throws for I/O errors.
void ForEachJsonLine(const std::string& path, const std::function<void(const nlohmann::json&, int)>& on_line);

}  // namespace shoal::delta
