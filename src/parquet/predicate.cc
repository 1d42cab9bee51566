#include "parquet/predicate.h"

#include <cctype>
#include <cmath>
#include <cstring>

#include "parquet/value_format.h"
#include "util/error.h"

namespace shoal::parquet {

Literal Literal::Int(int64_t v) {
  Literal l;
  l.kind = Kind::kInt;
  l.int_value = v;
  return l;
}
Literal Literal::Double(double v) {
  Literal l;
  l.kind = Kind::kDouble;
  l.double_value = v;
  return l;
}
Literal Literal::String(std::string v) {
  Literal l;
  l.kind = Kind::kString;
  l.string_value = std::move(v);
  return l;
}
Literal Literal::Bool(bool v) {
  Literal l;
  l.kind = Kind::kBool;
  l.bool_value = v;
  return l;
}

std::string Literal::ToString() const {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return bool_value ? "true" : "false";
    case Kind::kInt: return std::to_string(int_value);
    case Kind::kDouble: {
      std::string s;
      AppendJsonDouble(double_value, &s);
      return s;
    }
    case Kind::kString: return "'" + string_value + "'";
  }
  return "?";
}

std::optional<int> CompareLiterals(const Literal& a, const Literal& b) {
  using K = Literal::Kind;
  auto three_way = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if (a.kind == K::kInt && b.kind == K::kInt) return three_way(a.int_value, b.int_value);
  bool a_num = a.kind == K::kInt || a.kind == K::kDouble;
  bool b_num = b.kind == K::kInt || b.kind == K::kDouble;
  if (a_num && b_num) {
    double x = a.kind == K::kInt ? static_cast<double>(a.int_value) : a.double_value;
    double y = b.kind == K::kInt ? static_cast<double>(b.int_value) : b.double_value;
    if (std::isnan(x) || std::isnan(y)) return std::nullopt;
    return three_way(x, y);
  }
  if (a.kind == K::kString && b.kind == K::kString) {
    int c = a.string_value.compare(b.string_value);  // bytewise, as Parquet orders text
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.kind == K::kBool && b.kind == K::kBool) return three_way(a.bool_value, b.bool_value);
  return std::nullopt;
}

// ---- literals of column values ----

namespace {

double Pow10(int32_t scale) { return std::pow(10.0, scale); }

}  // namespace

Literal ValueAsLiteral(const Field& f, const uint8_t* bytes, size_t size) {
  using K = LogicalType::Kind;
  const LogicalType& logical = f.logical;
  auto need = [&](size_t n) {
    if (size < n) throw InvalidError("statistics value of '" + f.name + "' has " + std::to_string(size) + " bytes, expected " + std::to_string(n));
  };
  switch (f.physical) {
    case PhysicalType::kBoolean: need(1); return Literal::Bool(bytes[0] != 0);
    case PhysicalType::kInt32: {
      need(4);
      int32_t v;
      std::memcpy(&v, bytes, 4);
      if (logical.kind == K::kDecimal) return Literal::Double(v / Pow10(logical.scale));
      if (logical.kind == K::kInteger && !logical.is_signed) return Literal::Int(static_cast<uint32_t>(v));
      return Literal::Int(v);
    }
    case PhysicalType::kInt64: {
      need(8);
      int64_t v;
      std::memcpy(&v, bytes, 8);
      if (logical.kind == K::kDecimal) return Literal::Double(static_cast<double>(v) / Pow10(logical.scale));
      if (logical.kind == K::kInteger && !logical.is_signed && v < 0) {
        return Literal::Double(static_cast<double>(static_cast<uint64_t>(v)));
      }
      return Literal::Int(v);
    }
    case PhysicalType::kInt96: need(12); return Literal::Int(Int96ToMicros(bytes));
    case PhysicalType::kFloat: {
      need(4);
      float v;
      std::memcpy(&v, bytes, 4);
      return Literal::Double(v);
    }
    case PhysicalType::kDouble: {
      need(8);
      double v;
      std::memcpy(&v, bytes, 8);
      return Literal::Double(v);
    }
    case PhysicalType::kByteArray:
    case PhysicalType::kFixedLenByteArray:
      if (logical.kind == K::kDecimal) {
        return Literal::Double(std::strtod(FormatDecimalBigEndian(bytes, size, logical.scale).c_str(), nullptr));
      }
      if (logical.kind == K::kUuid && size == 16) return Literal::String(FormatUuid(bytes));
      if (logical.kind == K::kFloat16 && size == 2) {
        return Literal::Double(HalfToFloat(static_cast<uint16_t>(bytes[0] | (bytes[1] << 8))));
      }
      return Literal::String(std::string(reinterpret_cast<const char*>(bytes), size));
  }
  return Literal();
}

Literal SlotAsLiteral(const ColumnVector& column, int64_t row) {
  if (!column.IsValid(row)) return Literal();
  const Field& f = *column.field;
  if (f.physical == PhysicalType::kByteArray) {
    std::string_view v = column.Bytes(row);
    return ValueAsLiteral(f, reinterpret_cast<const uint8_t*>(v.data()), v.size());
  }
  size_t width = static_cast<size_t>(FixedWidthOf(f.physical, f.type_length));
  return ValueAsLiteral(f, column.data.data() + row * width, width);
}

namespace {

// Parses "YYYY-MM-DD[(T| )HH:MM[:SS[.fraction]]][Z|(+|-)HH:MM]" into UTC days and nanoseconds of the day.
bool ParseIso(const std::string& s, int64_t* days, int64_t* nanos_of_day, bool date_only_ok) {
  int y, m, d, hh = 0, mm = 0, ss = 0, consumed = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%d%n", &y, &m, &d, &consumed) != 3) return false;
  if (m < 1 || m > 12 || d < 1 || d > 31) return false;
  size_t pos = static_cast<size_t>(consumed);
  int64_t fraction_nanos = 0;
  if (pos < s.size() && (s[pos] == 'T' || s[pos] == ' ')) {
    int used = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%d:%d%n", &hh, &mm, &used) != 2) return false;
    pos += 1 + static_cast<size_t>(used);
    if (pos < s.size() && s[pos] == ':') {
      if (std::sscanf(s.c_str() + pos + 1, "%d%n", &ss, &used) != 1) return false;
      pos += 1 + static_cast<size_t>(used);
      if (pos < s.size() && s[pos] == '.') {
        int64_t scale = 100000000;
        for (++pos; pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])); ++pos) {
          fraction_nanos += (s[pos] - '0') * scale;
          scale /= 10;
        }
      }
    }
  } else if (!date_only_ok) {
    return false;
  }
  int64_t offset_seconds = 0;
  if (pos < s.size() && s[pos] == 'Z') {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-') && pos > static_cast<size_t>(consumed)) {
    int oh = 0, om = 0, used = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d%n", &oh, &om, &used) != 2 || used != 5) return false;
    offset_seconds = (s[pos] == '+' ? 1 : -1) * (oh * 3600LL + om * 60LL);
    pos += 6;
  }
  if (pos != s.size()) return false;
  // Days from civil date (inverse of the formatter's algorithm).
  int64_t yy = y - (m <= 2);
  int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
  unsigned yoe = static_cast<unsigned>(yy - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  *days = era * 146097 + static_cast<int64_t>(doe) - 719468;
  // An offset east of UTC means the instant is earlier: subtract it, carrying across days.
  int64_t nanos = ((hh * 60LL + mm) * 60 + ss - offset_seconds) * 1000000000LL + fraction_nanos;
  constexpr int64_t kDay = 86400LL * 1000000000LL;
  int64_t carry = nanos >= 0 ? nanos / kDay : -((-nanos + kDay - 1) / kDay);
  *days += carry;
  *nanos_of_day = nanos - carry * kDay;
  return true;
}

int64_t NanosPer(TimeUnit unit) {
  return unit == TimeUnit::kMillis ? 1000000 : unit == TimeUnit::kMicros ? 1000 : 1;
}

}  // namespace

Literal CoerceLiteral(const Field& f, const Literal& value) {
  using K = LogicalType::Kind;
  if (value.kind != Literal::Kind::kString) return value;
  bool is_date = f.logical.kind == K::kDate;
  bool is_timestamp = f.logical.kind == K::kTimestamp || f.physical == PhysicalType::kInt96;
  bool is_time = f.logical.kind == K::kTime;
  if (!is_date && !is_timestamp && !is_time) return value;
  int64_t days = 0, nanos = 0;
  if (is_time) {
    if (!ParseIso("1970-01-01T" + value.string_value, &days, &nanos, false)) {
      throw InvalidError("cannot read " + value.ToString() + " as a time of day for column '" + f.name + "' (expected HH:MM[:SS[.fff]])");
    }
    return Literal::Int(nanos / NanosPer(f.logical.unit));
  }
  if (!ParseIso(value.string_value, &days, &nanos, true)) {
    throw InvalidError("cannot read " + value.ToString() + " as a " + (is_date ? "date" : "timestamp") +
                       " for column '" + f.name + "' (expected YYYY-MM-DD[THH:MM:SS[.fff]])");
  }
  if (is_date) return Literal::Int(days);
  TimeUnit unit = f.physical == PhysicalType::kInt96 ? TimeUnit::kMicros : f.logical.unit;
  return Literal::Int(days * 86400LL * (1000000000LL / NanosPer(unit)) + nanos / NanosPer(unit));
}

// ---- statistics ----

std::optional<ColumnStats> RowGroupStatistics(const Schema& schema, const RowGroup& group,
                                              const std::string& name) {
  int index = schema.FieldIndex(name);
  if (index < 0) return std::nullopt;
  const Field& field = schema.fields()[index];
  if (field.kind != Field::Kind::kPrimitive) return std::nullopt;
  const ColumnChunk& chunk = group.columns[field.column_index];
  if (!chunk.meta_data || !chunk.meta_data->statistics) return std::nullopt;
  const Statistics& s = *chunk.meta_data->statistics;
  ColumnStats stats;
  stats.field = &field;
  stats.null_count = s.null_count;
  stats.num_values = chunk.meta_data->num_values;
  // min_value/max_value follow the column's sort order. The deprecated min/max used signed
  // comparison, which is right only for numbers.
  const std::optional<std::string>* min = &s.min_value;
  const std::optional<std::string>* max = &s.max_value;
  bool bytes_type = field.physical == PhysicalType::kByteArray ||
                    field.physical == PhysicalType::kFixedLenByteArray;
  bool unsigned_int = field.logical.kind == LogicalType::Kind::kInteger && !field.logical.is_signed;
  if (!min->has_value() && !max->has_value() && !bytes_type && !unsigned_int &&
      field.physical != PhysicalType::kInt96) {
    min = &s.min;
    max = &s.max;
  }
  auto literal = [&](const std::string& bytes) {
    return ValueAsLiteral(field, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  };
  if (min->has_value()) stats.min = literal(**min);
  if (max->has_value()) stats.max = literal(**max);
  return stats;
}

// ---- the predicate ----

Predicate Predicate::Compare(std::string column, Op op, Literal value) {
  Predicate p;
  p.op_ = op;
  p.column_ = std::move(column);
  p.literal_ = std::move(value);
  return p;
}
Predicate Predicate::IsNull(std::string column) { return Compare(std::move(column), Op::kIsNull, {}); }
Predicate Predicate::IsNotNull(std::string column) {
  return Compare(std::move(column), Op::kIsNotNull, {});
}
Predicate Predicate::And(std::vector<Predicate> children) {
  Predicate p;
  p.op_ = Op::kAnd;
  p.children_ = std::move(children);
  return p;
}
Predicate Predicate::Or(std::vector<Predicate> children) {
  Predicate p;
  p.op_ = Op::kOr;
  p.children_ = std::move(children);
  return p;
}

std::vector<std::string> Predicate::Columns() const {
  if (op_ != Op::kAnd && op_ != Op::kOr) return {column_};
  std::vector<std::string> out;
  for (const Predicate& c : children_) {
    for (std::string& name : c.Columns()) out.push_back(std::move(name));
  }
  return out;
}

namespace {
const char* OpText(Predicate::Op op) {
  using Op = Predicate::Op;
  switch (op) {
    case Op::kEq: return "=";
    case Op::kNe: return "!=";
    case Op::kLt: return "<";
    case Op::kLe: return "<=";
    case Op::kGt: return ">";
    case Op::kGe: return ">=";
    case Op::kIsNull: return "IS NULL";
    case Op::kIsNotNull: return "IS NOT NULL";
    case Op::kAnd: return "AND";
    case Op::kOr: return "OR";
  }
  return "?";
}

bool Holds(Predicate::Op op, int c) {
  using Op = Predicate::Op;
  switch (op) {
    case Op::kEq: return c == 0;
    case Op::kNe: return c != 0;
    case Op::kLt: return c < 0;
    case Op::kLe: return c <= 0;
    case Op::kGt: return c > 0;
    case Op::kGe: return c >= 0;
    default: return false;
  }
}
}  // namespace

std::string Predicate::ToString() const {
  if (op_ == Op::kAnd || op_ == Op::kOr) {
    std::string s = "(";
    for (size_t i = 0; i < children_.size(); ++i) {
      if (i) s += std::string(" ") + OpText(op_) + " ";
      s += children_[i].ToString();
    }
    return s + ")";
  }
  if (op_ == Op::kIsNull || op_ == Op::kIsNotNull) return column_ + " " + OpText(op_);
  return column_ + " " + OpText(op_) + " " + literal_.ToString();
}

bool Predicate::MayMatch(const StatsLookup& lookup) const {
  if (op_ == Op::kAnd) {
    for (const Predicate& c : children_) {
      if (!c.MayMatch(lookup)) return false;
    }
    return true;
  }
  if (op_ == Op::kOr) {
    for (const Predicate& c : children_) {
      if (c.MayMatch(lookup)) return true;
    }
    return children_.empty();
  }
  std::optional<ColumnStats> stats = lookup(column_);
  if (!stats) return true;
  if (op_ == Op::kIsNull) return !stats->null_count || *stats->null_count > 0;
  bool all_null = stats->null_count && stats->num_values >= 0 && *stats->null_count >= stats->num_values;
  if (op_ == Op::kIsNotNull) return !all_null;
  if (all_null || literal_.kind == Literal::Kind::kNull) return false;  // comparisons with null are false
  Literal value = stats->field ? CoerceLiteral(*stats->field, literal_) : literal_;
  std::optional<int> vs_min, vs_max;  // sign of (min - value), (max - value)
  if (stats->min) vs_min = CompareLiterals(*stats->min, value);
  if (stats->max) vs_max = CompareLiterals(*stats->max, value);
  switch (op_) {
    case Op::kEq: return !(vs_min && *vs_min > 0) && !(vs_max && *vs_max < 0);
    case Op::kNe: return !(vs_min && vs_max && *vs_min == 0 && *vs_max == 0);
    case Op::kLt: return !(vs_min && *vs_min >= 0);
    case Op::kLe: return !(vs_min && *vs_min > 0);
    case Op::kGt: return !(vs_max && *vs_max <= 0);
    case Op::kGe: return !(vs_max && *vs_max < 0);
    default: return true;
  }
}

std::vector<uint8_t> Predicate::Evaluate(const RecordBatch& batch) const {
  std::vector<uint8_t> mask(static_cast<size_t>(batch.num_rows), op_ == Op::kAnd ? 1 : 0);
  if (op_ == Op::kAnd || op_ == Op::kOr) {
    for (const Predicate& c : children_) {
      std::vector<uint8_t> m = c.Evaluate(batch);
      for (size_t i = 0; i < mask.size(); ++i) mask[i] = op_ == Op::kAnd ? (mask[i] & m[i]) : (mask[i] | m[i]);
    }
    return mask;
  }
  const ColumnVector* column = nullptr;
  for (size_t c = 0; c < batch.columns.size(); ++c) {
    if (batch.field(c).name == column_) column = &batch.columns[c];
  }
  if (column == nullptr) throw NotFoundError("the predicate reads column '" + column_ + "', which the data does not have");
  const Field& field = *column->field;
  if (field.kind != Field::Kind::kPrimitive) {
    throw InvalidError("the predicate compares column '" + column_ + "', which is not a primitive column");
  }
  if (op_ == Op::kIsNull || op_ == Op::kIsNotNull) {
    for (int64_t r = 0; r < batch.num_rows; ++r) mask[r] = column->IsValid(r) == (op_ == Op::kIsNotNull);
    return mask;
  }
  Literal value = CoerceLiteral(field, literal_);
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    if (!column->IsValid(r) || value.kind == Literal::Kind::kNull) continue;
    std::optional<int> c = CompareLiterals(SlotAsLiteral(*column, r), value);
    if (!c) {
      throw InvalidError("cannot compare column '" + column_ + "' with " + literal_.ToString() +
                         ": the types differ");
    }
    mask[r] = Holds(op_, *c);
  }
  return mask;
}

// ---- filtering ----

namespace {

// The slots `rows` of a column, with everything nested under them.
ColumnVector TakeRows(const ColumnVector& in, const std::vector<int64_t>& rows) {
  ColumnVector out;
  out.field = in.field;
  out.length = static_cast<int64_t>(rows.size());
  if (!in.validity.empty()) {
    for (int64_t r : rows) out.validity.push_back(in.validity[r]);
  }
  const Field& f = *in.field;
  switch (f.kind) {
    case Field::Kind::kPrimitive:
      if (f.physical == PhysicalType::kByteArray) {
        out.offsets.push_back(0);
        for (int64_t r : rows) {
          std::string_view v = in.Bytes(r);
          AppendBytes(out.data, v.data(), v.size());
          out.offsets.push_back(static_cast<int64_t>(out.data.size()));
        }
      } else {
        size_t width = static_cast<size_t>(FixedWidthOf(f.physical, f.type_length));
        for (int64_t r : rows) AppendBytes(out.data, in.data.data() + r * width, width);
      }
      break;
    case Field::Kind::kStruct:
      for (const ColumnVector& child : in.children) out.children.push_back(TakeRows(child, rows));
      break;
    case Field::Kind::kList:
    case Field::Kind::kMap: {
      std::vector<int64_t> elements;
      out.offsets.push_back(0);
      for (int64_t r : rows) {
        for (int64_t e = in.offsets[r]; e < in.offsets[r + 1]; ++e) elements.push_back(e);
        out.offsets.push_back(static_cast<int64_t>(elements.size()));
      }
      out.children.push_back(TakeRows(in.children[0], elements));
      break;
    }
  }
  return out;
}


}  // namespace

RecordBatch FilterBatch(const RecordBatch& batch, const std::vector<uint8_t>& mask) {
  std::vector<int64_t> rows;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) rows.push_back(static_cast<int64_t>(i));
  }
  RecordBatch out;
  out.schema = batch.schema;
  out.field_indices = batch.field_indices;
  out.num_rows = static_cast<int64_t>(rows.size());
  for (const ColumnVector& column : batch.columns) out.columns.push_back(TakeRows(column, rows));
  return out;
}

// ---- parsing ----

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Predicate ParseAll() {
    Predicate p = ParseOr();
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected '" + std::string(text_.substr(pos_, 10)) + "'");
    return p;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw InvalidError("cannot parse predicate \"" + std::string(text_) + "\" at character " +
                       std::to_string(pos_ + 1) + ": " + what);
  }

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool Keyword(std::string_view word) {
    SkipSpace();
    if (text_.size() - pos_ < word.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      if (std::toupper(static_cast<unsigned char>(text_[pos_ + i])) != word[i]) return false;
    }
    size_t end = pos_ + word.size();
    if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) return false;
    pos_ = end;
    return true;
  }

  Predicate ParseOr() {
    std::vector<Predicate> terms{ParseAnd()};
    while (Keyword("OR")) terms.push_back(ParseAnd());
    return terms.size() == 1 ? std::move(terms[0]) : Predicate::Or(std::move(terms));
  }

  Predicate ParseAnd() {
    std::vector<Predicate> terms{ParseTerm()};
    while (Keyword("AND")) terms.push_back(ParseTerm());
    return terms.size() == 1 ? std::move(terms[0]) : Predicate::And(std::move(terms));
  }

  Predicate ParseTerm() {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      ++pos_;
      Predicate inner = ParseOr();
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ')') Fail("expected ')'");
      ++pos_;
      return inner;
    }
    std::string column = ParseIdentifier();
    if (Keyword("IS")) {
      bool negated = Keyword("NOT");
      if (!Keyword("NULL")) Fail("expected NULL after IS");
      return negated ? Predicate::IsNotNull(column) : Predicate::IsNull(column);
    }
    Predicate::Op op = ParseOperator();
    return Predicate::Compare(column, op, ParseLiteral());
  }

  std::string ParseIdentifier() {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '`') {
      size_t end = text_.find('`', pos_ + 1);
      if (end == std::string_view::npos) Fail("unterminated `quoted` column name");
      std::string name(text_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return name;
    }
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' || text_[pos_] == '.')) {
      ++pos_;
    }
    if (start == pos_) Fail("expected a column name");
    return std::string(text_.substr(start, pos_ - start));
  }

  Predicate::Op ParseOperator() {
    SkipSpace();
    using Op = Predicate::Op;
    static const std::pair<std::string_view, Op> kOps[] = {
        {"==", Op::kEq}, {"!=", Op::kNe}, {"<>", Op::kNe}, {"<=", Op::kLe}, {">=", Op::kGe},
        {"=", Op::kEq},  {"<", Op::kLt},  {">", Op::kGt}};
    for (const auto& [text, op] : kOps) {
      if (text_.substr(pos_, text.size()) == text) {
        pos_ += text.size();
        return op;
      }
    }
    Fail("expected an operator (= != < <= > >= or IS [NOT] NULL)");
  }

  Literal ParseLiteral() {
    SkipSpace();
    if (pos_ >= text_.size()) Fail("expected a literal");
    char c = text_[pos_];
    if (c == '\'' || c == '"') {
      std::string value;
      for (++pos_; pos_ < text_.size(); ++pos_) {
        if (text_[pos_] == c) {
          if (pos_ + 1 < text_.size() && text_[pos_ + 1] == c) {  // doubled quote
            value.push_back(c);
            ++pos_;
            continue;
          }
          ++pos_;
          return Literal::String(std::move(value));
        }
        value.push_back(text_[pos_]);
      }
      Fail("unterminated string literal");
    }
    if (Keyword("TRUE")) return Literal::Bool(true);
    if (Keyword("FALSE")) return Literal::Bool(false);
    if (Keyword("NULL")) return Literal();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   std::strchr("+-._:", text_[pos_]) != nullptr)) {
      ++pos_;
    }
    std::string token(text_.substr(start, pos_ - start));
    if (token.empty()) Fail("expected a literal");
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(token.c_str(), &end, 10);
    if (*end == '\0' && errno == 0) return Literal::Int(i);
    double d = std::strtod(token.c_str(), &end);
    if (*end == '\0') return Literal::Double(d);
    return Literal::String(token);  // bare words such as 2024-01-31
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Predicate Predicate::Parse(std::string_view text) { return Parser(text).ParseAll(); }

}  // namespace shoal::parquet
