#include "track/search.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "util/error.h"

namespace shoal::track {

std::string AsciiLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

namespace {

// "metric" and "metrics", "param"/"params", "tag"/"tags", "attribute"/"attributes"/"run".
std::string Entity(const std::string& word, const std::string& where) {
  std::string kind = AsciiLower(word);
  if (kind == "metric" || kind == "param" || kind == "tag" || kind == "attribute") kind += 's';
  if (kind == "run") kind = "attributes";
  if (kind != "metrics" && kind != "params" && kind != "tags" && kind != "attributes") {
    throw InvalidError(where + ": unknown entity '" + word + "' (metrics, params, tags, attributes)");
  }
  return kind;
}

}  // namespace

std::vector<Clause> ParseFilter(const std::string& filter) {
  std::vector<Clause> out;
  const std::string where = "filter '" + filter + "'";
  size_t i = 0;
  auto skip = [&] {
    while (i < filter.size() && std::isspace(static_cast<unsigned char>(filter[i]))) ++i;
  };
  auto quoted = [&](char q) {
    size_t end = filter.find(q, i + 1);
    if (end == std::string::npos) throw InvalidError(where + ": unclosed " + std::string(1, q));
    std::string s = filter.substr(i + 1, end - i - 1);
    i = end + 1;
    return s;
  };
  while (true) {
    skip();
    if (i >= filter.size()) break;
    Clause c;
    // ENTITY.KEY, or a bare attribute name (`status = 'FINISHED'`).
    size_t word = i;
    while (word < filter.size() && (std::isalnum(static_cast<unsigned char>(filter[word])) || filter[word] == '_')) ++word;
    if (word == i) throw InvalidError(where + ": expected metrics.KEY, params.KEY, tags.KEY or attributes.KEY at '" + filter.substr(i, 20) + "'");
    if (word < filter.size() && filter[word] == '.') {
      c.kind = Entity(filter.substr(i, word - i), where);
      i = word + 1;
    } else {
      c.kind = "attributes";
    }
    if (i < filter.size() && (filter[i] == '"' || filter[i] == '`' || filter[i] == '\'')) {
      c.key = quoted(filter[i]);
    } else {
      size_t start = i;
      while (i < filter.size() && !std::isspace(static_cast<unsigned char>(filter[i])) && std::strchr("<>=!", filter[i]) == nullptr) ++i;
      c.key = filter.substr(start, i - start);
    }
    if (c.key.empty()) throw InvalidError(where + ": an empty key");
    skip();
    for (const char* op : {"!=", ">=", "<=", "=", ">", "<"}) {
      if (filter.compare(i, std::strlen(op), op) == 0) {
        c.op = op;
        i += std::strlen(op);
        break;
      }
    }
    if (c.op.empty()) {
      size_t start = i;
      while (i < filter.size() && std::isalpha(static_cast<unsigned char>(filter[i]))) ++i;
      c.op = AsciiLower(filter.substr(start, i - start));
      if (c.op != "like" && c.op != "ilike") throw InvalidError(where + ": expected a comparison after '" + c.key + "'");
    }
    skip();
    if (i < filter.size() && (filter[i] == '\'' || filter[i] == '"')) {
      c.text = quoted(filter[i]);
    } else {
      size_t start = i;
      while (i < filter.size() && !std::isspace(static_cast<unsigned char>(filter[i]))) ++i;
      std::string token = filter.substr(start, i - start);
      char* end = nullptr;
      c.number = std::strtod(token.c_str(), &end);
      if (token.empty() || *end != '\0') throw InvalidError(where + ": '" + token + "' is neither a number nor a quoted string");
      c.numeric = true;
      c.text = token;
    }
    if (c.kind == "metrics" && (!c.numeric || c.op == "like" || c.op == "ilike")) {
      throw InvalidError(where + ": metrics compare with numbers (=, !=, <, <=, >, >=)");
    }
    if ((c.kind == "params" || c.kind == "tags") && c.op != "=" && c.op != "!=" && c.op != "like" && c.op != "ilike") {
      throw InvalidError(where + ": " + c.kind + " compare as strings, with =, !=, LIKE or ILIKE, not " + c.op);
    }
    out.push_back(c);
    skip();
    if (i >= filter.size()) break;
    if (AsciiLower(filter.substr(i, 3)) != "and" || i + 3 >= filter.size() || !std::isspace(static_cast<unsigned char>(filter[i + 3]))) {
      throw InvalidError(where + ": clauses join with AND, at '" + filter.substr(i, 20) + "'");
    }
    i += 3;
  }
  return out;
}

std::vector<OrderKey> ParseOrderBy(const std::vector<std::string>& order_by) {
  std::vector<OrderKey> keys;
  for (const std::string& o : order_by) {
    std::string s = o;
    OrderKey k;
    const std::string low = AsciiLower(s);
    if (low.size() > 5 && low.compare(low.size() - 5, 5, " desc") == 0) {
      k.desc = true;
      s.resize(s.size() - 5);
    } else if (low.size() > 4 && low.compare(low.size() - 4, 4, " asc") == 0) {
      s.resize(s.size() - 4);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    const size_t dot = s.find('.');
    if (dot == std::string::npos) {  // a bare attribute: `start_time DESC`
      k.kind = "attributes";
      k.key = s;
    } else {
      k.kind = Entity(s.substr(0, dot), "order_by '" + o + "'");
      k.key = s.substr(dot + 1);
    }
    if (k.key.size() >= 2 && (k.key.front() == '"' || k.key.front() == '`') && k.key.back() == k.key.front()) {
      k.key = k.key.substr(1, k.key.size() - 2);
    }
    if (k.key.empty()) throw InvalidError("order_by '" + o + "': an empty key");
    keys.push_back(k);
  }
  return keys;
}

bool Like(const std::string& value, const std::string& pattern, bool fold) {
  std::string re;
  for (char c : pattern) {
    if (c == '%') {
      re += ".*";
    } else if (c == '_') {
      re += '.';
    } else {
      if (std::strchr("\\^$.|?*+()[]{}", c) != nullptr) re += '\\';
      re += c;
    }
  }
  return std::regex_match(value, std::regex(re, fold ? std::regex::icase : std::regex::ECMAScript));
}

std::string LikeToGlob(const std::string& pattern) {
  std::string glob;
  for (char c : pattern) {
    if (c == '%') {
      glob += '*';
    } else if (c == '_') {
      glob += '?';
    } else if (c == '*' || c == '?' || c == '[') {
      glob += '[';
      glob += c;
      glob += ']';
    } else {
      glob += c;
    }
  }
  return glob;
}

bool CompareNumbers(const std::string& op, double a, double b) {
  if (op == "=") return a == b;
  if (op == "!=") return a != b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  throw InvalidError("numbers compare with =, !=, <, <=, > or >=, not " + op);
}

bool CompareText(const std::string& op, const std::string& a, const std::string& b) {
  if (op == "like") return Like(a, b, false);
  if (op == "ilike") return Like(a, b, true);
  if (op == "=") return a == b;
  if (op == "!=") return a != b;
  throw InvalidError("strings compare with =, !=, LIKE or ILIKE, not " + op);
}

bool MatchesExperiment(const Experiment& e, const std::vector<Clause>& clauses) {
  for (const Clause& c : clauses) {
    if (c.kind == "tags") {
      auto it = e.tags.find(c.key);
      if (it == e.tags.end() || !CompareText(c.op, it->second, c.text)) return false;
    } else if (c.kind == "attributes" && (c.key == "creation_time" || c.key == "last_update_time")) {
      if (!c.numeric) throw InvalidError("attributes." + c.key + " compares with a number");
      const double v = static_cast<double>(c.key == "creation_time" ? e.creation_time : e.last_update_time);
      if (!CompareNumbers(c.op, v, c.number)) return false;
    } else if (c.kind == "attributes" && (c.key == "name" || c.key == "experiment_name")) {
      if (!CompareText(c.op, e.name, c.text)) return false;
    } else {
      throw InvalidError("experiments filter on attributes.name, attributes.creation_time, attributes.last_update_time "
                         "and tags.KEY, not " + c.kind + "." + c.key);
    }
  }
  return true;
}

}  // namespace shoal::track
