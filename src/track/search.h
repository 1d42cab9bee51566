// MLflow's search grammar, as its REST API documents it: a filter is clauses joined by AND
// (`metrics.val_loss < 0.3 and params.optimizer = 'adam' and attributes.status = "FINISHED"`),
// and order_by keys (`metrics.val_loss DESC`). The store turns them into SQL for runs; experiments
// are few, and are matched here.
#pragma once

#include <string>
#include <vector>

#include "track/store.h"

namespace shoal::track {

struct Clause {
  std::string kind;  ///< metrics, params, tags or attributes
  std::string key;
  std::string op;    ///< =, !=, <, <=, >, >=, like, ilike
  std::string text;  ///< the value as written (unquoted)
  double number = 0;
  bool numeric = false;  ///< the value was an unquoted number
};

struct OrderKey {
  std::string kind;  ///< metrics, params, tags or attributes
  std::string key;
  bool desc = false;
};

/// Errors: Invalid, naming the filter and what is wrong at which clause.
std::vector<Clause> ParseFilter(const std::string& filter);
std::vector<OrderKey> ParseOrderBy(const std::vector<std::string>& order_by);

std::string AsciiLower(std::string s);

/// SQL's LIKE (`%` any run, `_` one character); `fold`: ILIKE, ignoring case.
bool Like(const std::string& value, const std::string& pattern, bool fold);
/// A LIKE pattern as an SQLite GLOB pattern (GLOB is case-sensitive, as MLflow's LIKE is).
std::string LikeToGlob(const std::string& pattern);
bool CompareNumbers(const std::string& op, double a, double b);
bool CompareText(const std::string& op, const std::string& a, const std::string& b);

/// experiments/search: attributes.name, attributes.creation_time, attributes.last_update_time
/// and tags.KEY.
bool MatchesExperiment(const Experiment& e, const std::vector<Clause>& clauses);

}  // namespace shoal::track
