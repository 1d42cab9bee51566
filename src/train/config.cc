#include "train/config.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "util/error.h"

namespace shoal::train {

/// "[a, 'b', 3]" as a JSON list of scalars (YAML's flow sequence).
nlohmann::json FlowList(const std::string& text);

namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// The line without a comment: '#' outside quotes, at the start or after a space.
std::string StripComment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(line[i - 1])))) {
      return line.substr(0, i);
    }
  }
  return line;
}

struct Line {
  int indent;
  std::string text;
  int number;
};

class Parser {
 public:
  Parser(std::vector<Line> lines, std::string name) : lines_(std::move(lines)), name_(std::move(name)) {}

  nlohmann::json Parse() {
    if (lines_.empty()) return nlohmann::json::object();
    nlohmann::json out = Block(lines_[0].indent);
    if (pos_ < lines_.size()) Fail(lines_[pos_], "unexpected indentation");
    return out;
  }

 private:
  [[noreturn]] void Fail(const Line& line, const std::string& why) const {
    throw InvalidError(name_ + " line " + std::to_string(line.number) + ": " + why + " ('" + line.text + "')");
  }

  nlohmann::json Block(int indent) {
    if (lines_[pos_].text.rfind("- ", 0) == 0 || lines_[pos_].text == "-") return List(indent);
    nlohmann::json map = nlohmann::json::object();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent) {
      const Line& line = lines_[pos_];
      size_t colon = KeyColon(line.text);
      if (colon == std::string::npos) Fail(line, "expected 'key: value'");
      std::string key = Unquote(Trim(line.text.substr(0, colon)));
      std::string rest = Trim(line.text.substr(colon + 1));
      if (map.contains(key)) Fail(line, "duplicate key '" + key + "'");
      ++pos_;
      if (!rest.empty()) {
        map[key] = Value(rest, line);
      } else if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
        map[key] = Block(lines_[pos_].indent);
      } else {
        map[key] = nullptr;
      }
    }
    if (pos_ < lines_.size() && lines_[pos_].indent > indent) Fail(lines_[pos_], "unexpected indentation");
    return map;
  }

  nlohmann::json List(int indent) {
    nlohmann::json list = nlohmann::json::array();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent && lines_[pos_].text[0] == '-') {
      const Line& line = lines_[pos_];
      std::string rest = Trim(line.text.substr(1));
      ++pos_;
      if (rest.empty()) {
        if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
          list.push_back(Block(lines_[pos_].indent));
        } else {
          list.push_back(nullptr);
        }
      } else {
        list.push_back(Value(rest, line));
      }
    }
    return list;
  }

  // The colon that ends a key: the first ": " or a trailing ':' outside quotes.
  static size_t KeyColon(const std::string& text) {
    char quote = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == ':' && (i + 1 == text.size() || text[i + 1] == ' ')) {
        return i;
      }
    }
    return std::string::npos;
  }

  nlohmann::json Value(const std::string& text, const Line& line) const {
    if (text.front() == '[') {
      if (text.back() != ']') Fail(line, "unclosed '['");
      return FlowList(text);
    }
    if (text.front() == '{') Fail(line, "flow mappings are not supported; use indented lines");
    return ParseScalar(text);
  }

  static std::string Unquote(const std::string& s) {
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) return s.substr(1, s.size() - 2);
    return s;
  }

  std::vector<Line> lines_;
  std::string name_;
  size_t pos_ = 0;
};

}  // namespace

nlohmann::json ParseScalar(const std::string& raw) {
  std::string text = Trim(raw);
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  if (text.empty() || text == "null" || text == "~") return nullptr;
  if (text == "true" || text == "True") return true;
  if (text == "false" || text == "False") return false;
  char* end = nullptr;
  long long i = std::strtoll(text.c_str(), &end, 10);
  if (end && *end == '\0') return i;
  double d = std::strtod(text.c_str(), &end);
  if (end && *end == '\0') return d;
  return text;
}

nlohmann::json ParseYaml(const std::string& text, const std::string& name) {
  std::vector<Line> lines;
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) {
    ++number;
    if (raw.find('\t') != std::string::npos && Trim(raw).size() > 0 && raw.find_first_not_of(" \t") > raw.find('\t')) {
      throw InvalidError(name + " line " + std::to_string(number) + ": indent with spaces, not tabs");
    }
    std::string line = StripComment(raw);
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed == "---") continue;
    int indent = static_cast<int>(line.find_first_not_of(' '));
    lines.push_back({indent, trimmed, number});
  }
  return Parser(std::move(lines), name).Parse();
}

nlohmann::json FlowList(const std::string& text) {
  nlohmann::json list = nlohmann::json::array();
  std::string inner = Trim(text.substr(1, text.size() - 2));
  if (inner.empty()) return list;
  std::string item;
  char quote = 0;
  for (char c : inner + ",") {
    if (quote) {
      if (c == quote) quote = 0;
      item += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      item += c;
    } else if (c == ',') {
      list.push_back(ParseScalar(Trim(item)));
      item.clear();
    } else {
      item += c;
    }
  }
  return list;
}

void ApplyOverrides(nlohmann::json& config, const std::vector<std::string>& overrides) {
  for (std::string o : overrides) {
    if (o.rfind("--", 0) == 0) o = o.substr(2);
    size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InvalidError("override '" + o + "' is not of the form section.key=value");
    }
    std::string path = o.substr(0, eq);
    nlohmann::json* node = &config;
    size_t start = 0;
    while (true) {
      size_t dot = path.find('.', start);
      std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (key.empty()) throw InvalidError("override '" + o + "' has an empty key");
      if (!node->is_object()) {
        if (!node->is_null()) throw InvalidError("override '" + o + "': '" + key + "' is under a value, not a section");
        *node = nlohmann::json::object();
      }
      node = &(*node)[key];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    std::string value = o.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '[' && value.back() == ']') {
      *node = FlowList(value);  // --model.hidden=[64,32]
    } else {
      *node = value.empty() ? nlohmann::json("") : ParseScalar(value);
    }
  }
}

}  // namespace shoal::train
