#include "parquet/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string_view>
#include <unordered_map>

#include "parquet/compression.h"
#include "parquet/encoding.h"
#include "util/crc32.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::parquet {

// ---- schema ----

WriteField WriteField::Primitive(std::string name, PhysicalType type, bool nullable, LogicalType logical,
                                 int32_t type_length) {
  WriteField f;
  f.name = std::move(name);
  f.kind = Kind::kPrimitive;
  f.nullable = nullable;
  f.physical = type;
  f.logical = logical;
  f.type_length = type_length;
  return f;
}

WriteField WriteField::String(std::string name, bool nullable) {
  LogicalType logical;
  logical.kind = LogicalType::Kind::kString;
  return Primitive(std::move(name), PhysicalType::kByteArray, nullable, logical);
}

WriteField WriteField::Struct(std::string name, std::vector<WriteField> fields, bool nullable) {
  WriteField f;
  f.name = std::move(name);
  f.kind = Kind::kStruct;
  f.nullable = nullable;
  f.children = std::move(fields);
  return f;
}

WriteField WriteField::List(std::string name, WriteField element, bool nullable) {
  WriteField f;
  f.name = std::move(name);
  f.kind = Kind::kList;
  f.nullable = nullable;
  f.children.push_back(std::move(element));
  return f;
}

WriteField WriteField::Map(std::string name, WriteField key, WriteField value, bool nullable) {
  WriteField f;
  f.name = std::move(name);
  f.kind = Kind::kMap;
  f.nullable = nullable;
  key.nullable = false;
  f.children.push_back(std::move(key));
  f.children.push_back(std::move(value));
  return f;
}

namespace {

ConvertedType ConvertedTypeOf(const LogicalType& t) {
  using K = LogicalType::Kind;
  switch (t.kind) {
    case K::kString: return ConvertedType::kUtf8;
    case K::kEnum: return ConvertedType::kEnum;
    case K::kJson: return ConvertedType::kJson;
    case K::kBson: return ConvertedType::kBson;
    case K::kDecimal: return ConvertedType::kDecimal;
    case K::kDate: return ConvertedType::kDate;
    case K::kTime:
      return t.unit == TimeUnit::kMillis ? ConvertedType::kTimeMillis
             : t.unit == TimeUnit::kMicros ? ConvertedType::kTimeMicros : ConvertedType::kNone;
    case K::kTimestamp:
      return t.unit == TimeUnit::kMillis ? ConvertedType::kTimestampMillis
             : t.unit == TimeUnit::kMicros ? ConvertedType::kTimestampMicros : ConvertedType::kNone;
    case K::kInteger: {
      static const ConvertedType kSigned[] = {ConvertedType::kInt8, ConvertedType::kInt16, ConvertedType::kInt32,
                                              ConvertedType::kInt64};
      static const ConvertedType kUnsigned[] = {ConvertedType::kUint8, ConvertedType::kUint16,
                                                ConvertedType::kUint32, ConvertedType::kUint64};
      int index = t.bit_width == 8 ? 0 : t.bit_width == 16 ? 1 : t.bit_width == 32 ? 2 : 3;
      return t.is_signed ? kSigned[index] : kUnsigned[index];
    }
    default: return ConvertedType::kNone;
  }
}

SchemaElement Group(const std::string& name, Repetition repetition, int children) {
  SchemaElement e;
  e.name = name;
  e.repetition = repetition;
  e.num_children = children;
  return e;
}

void AppendElements(const WriteField& f, Repetition repetition, std::vector<SchemaElement>* out) {
  using K = WriteField::Kind;
  switch (f.kind) {
    case K::kPrimitive: {
      if (f.physical == PhysicalType::kFixedLenByteArray && f.type_length <= 0) {
        throw InvalidError("field '" + f.name + "' is FIXED_LEN_BYTE_ARRAY without a positive length");
      }
      SchemaElement e;
      e.name = f.name;
      e.type = f.physical;
      e.type_length = f.type_length;
      e.repetition = repetition;
      e.converted_type = ConvertedTypeOf(f.logical);
      if (f.logical.kind == LogicalType::Kind::kDecimal) {
        e.scale = f.logical.scale;
        e.precision = f.logical.precision;
      }
      if (f.logical.kind != LogicalType::Kind::kNone) e.logical_type = f.logical;
      out->push_back(e);
      return;
    }
    case K::kStruct: {
      if (f.children.empty()) throw InvalidError("struct field '" + f.name + "' has no fields");
      out->push_back(Group(f.name, repetition, static_cast<int>(f.children.size())));
      for (const WriteField& c : f.children) AppendElements(c, c.nullable ? Repetition::kOptional : Repetition::kRequired, out);
      return;
    }
    case K::kList: {
      if (f.children.size() != 1) throw InvalidError("list field '" + f.name + "' needs exactly one element field");
      SchemaElement list = Group(f.name, repetition, 1);
      list.converted_type = ConvertedType::kList;
      list.logical_type = LogicalType{LogicalType::Kind::kList};
      out->push_back(list);
      out->push_back(Group("list", Repetition::kRepeated, 1));
      WriteField element = f.children[0];
      element.name = "element";
      AppendElements(element, element.nullable ? Repetition::kOptional : Repetition::kRequired, out);
      return;
    }
    case K::kMap: {
      if (f.children.size() != 2) throw InvalidError("map field '" + f.name + "' needs a key and a value field");
      SchemaElement map = Group(f.name, repetition, 1);
      map.converted_type = ConvertedType::kMap;
      map.logical_type = LogicalType{LogicalType::Kind::kMap};
      out->push_back(map);
      out->push_back(Group("key_value", Repetition::kRepeated, 2));
      WriteField key = f.children[0], value = f.children[1];
      key.name = "key";
      value.name = "value";
      AppendElements(key, Repetition::kRequired, out);
      AppendElements(value, value.nullable ? Repetition::kOptional : Repetition::kRequired, out);
      return;
    }
  }
}

}  // namespace

WriteField WriteFieldOf(const Field& f) {
  switch (f.kind) {
    case Field::Kind::kPrimitive: return WriteField::Primitive(f.name, f.physical, f.nullable, f.logical, f.type_length);
    case Field::Kind::kStruct: {
      std::vector<WriteField> children;
      for (const Field& c : f.children) children.push_back(WriteFieldOf(c));
      return WriteField::Struct(f.name, std::move(children), f.nullable);
    }
    case Field::Kind::kList: return WriteField::List(f.name, WriteFieldOf(f.children[0]), f.nullable);
    case Field::Kind::kMap: {
      const Field& entries = f.children[0];
      WriteField value = entries.children.size() > 1
                             ? WriteFieldOf(entries.children[1])
                             : WriteField::Primitive("value", PhysicalType::kBoolean, true, LogicalType{LogicalType::Kind::kUnknown});
      return WriteField::Map(f.name, WriteFieldOf(entries.children[0]), value, f.nullable);
    }
  }
  return {};
}

std::vector<WriteField> WriteFieldsOf(const Schema& schema) {
  std::vector<WriteField> fields;
  for (const Field& f : schema.fields()) fields.push_back(WriteFieldOf(f));
  return fields;
}

std::vector<SchemaElement> ToSchemaElements(const std::vector<WriteField>& fields, const std::string& root_name) {
  std::vector<SchemaElement> out;
  SchemaElement root;
  root.name = root_name;
  root.num_children = static_cast<int32_t>(fields.size());
  out.push_back(root);
  for (const WriteField& f : fields) AppendElements(f, f.nullable ? Repetition::kOptional : Repetition::kRequired, &out);
  return out;
}

// ---- shredding: nested values to levels ----

struct FileWriter::Leaf {
  const ColumnDescriptor* column = nullptr;
  std::vector<int16_t> definition_levels;
  std::vector<int16_t> repetition_levels;
  ValueBuffer values;
  int64_t null_count = 0;

  void Reset() {
    definition_levels.clear();
    repetition_levels.clear();
    values.Reset(column->physical, column->type_length);
    null_count = 0;
  }
  size_t BufferedBytes() const {
    return values.data.size() + values.offsets.size() * 4 + definition_levels.size() / 4 + repetition_levels.size() / 4;
  }
  void Levels(int16_t rep, int16_t def) {
    if (column->max_repetition_level > 0) repetition_levels.push_back(rep);
    if (column->max_definition_level > 0) definition_levels.push_back(def);
  }
};

namespace {

class Shredder {
 public:
  explicit Shredder(std::vector<FileWriter::Leaf*> leaves) : leaves_(std::move(leaves)) {}

  // Checks that `column` has the shape of `field` before any value is read from it.
  static void Validate(const Field& field, const ColumnVector& column) {
    auto fail = [&](const std::string& what) {
      throw InvalidError("column '" + field.name + "' does not match its field: " + what);
    };
    if (!column.validity.empty() && static_cast<int64_t>(column.validity.size()) != column.length) {
      fail("validity has " + std::to_string(column.validity.size()) + " entries for " + std::to_string(column.length) + " slots");
    }
    if (!field.nullable && !column.validity.empty() &&
        std::find(column.validity.begin(), column.validity.end(), 0) != column.validity.end()) {
      fail("the field is required, but the column has nulls");
    }
    auto check_offsets = [&](int64_t limit) {
      if (static_cast<int64_t>(column.offsets.size()) != column.length + 1 || column.offsets[0] != 0) {
        fail("expected " + std::to_string(column.length + 1) + " offsets starting at 0");
      }
      for (int64_t i = 0; i < column.length; ++i) {
        if (column.offsets[i + 1] < column.offsets[i]) fail("offsets decrease at slot " + std::to_string(i));
      }
      if (column.offsets.back() > limit) fail("offsets run past the " + std::to_string(limit) + " values");
    };
    switch (field.kind) {
      case Field::Kind::kPrimitive:
        if (column.field && column.field->physical != field.physical) {
          fail(std::string(PhysicalTypeName(column.field->physical)) + " values for a " +
               std::string(PhysicalTypeName(field.physical)) + " field");
        }
        if (field.physical == PhysicalType::kByteArray) {
          check_offsets(static_cast<int64_t>(column.data.size()));
        } else {
          int64_t width = FixedWidthOf(field.physical, field.type_length);
          if (static_cast<int64_t>(column.data.size()) != column.length * width) {
            fail(std::to_string(column.data.size()) + " bytes of values for " + std::to_string(column.length) +
                 " slots of " + std::to_string(width) + " bytes");
          }
        }
        return;
      case Field::Kind::kStruct:
        if (column.children.size() != field.children.size()) {
          fail(std::to_string(column.children.size()) + " children for " + std::to_string(field.children.size()) + " fields");
        }
        for (size_t k = 0; k < field.children.size(); ++k) {
          if (column.children[k].length != column.length) fail("child '" + field.children[k].name + "' has another length");
          Validate(field.children[k], column.children[k]);
        }
        return;
      case Field::Kind::kList:
      case Field::Kind::kMap:
        if (column.children.size() != 1) fail("a list needs one child column");
        check_offsets(column.children[0].length);
        Validate(field.children[0], column.children[0]);
        return;
    }
  }

  // Emits the levels and values of slot `i` of `column` (a present parent's slot).
  void Emit(const Field& field, const ColumnVector& column, int64_t i, int16_t rep) {
    if (!column.IsValid(i)) {
      EmitNull(field, rep, static_cast<int16_t>(field.definition_level - 1));
      return;
    }
    switch (field.kind) {
      case Field::Kind::kPrimitive: {
        FileWriter::Leaf& leaf = *leaves_[field.column_index];
        leaf.Levels(rep, field.definition_level);
        if (field.physical == PhysicalType::kByteArray) {
          std::string_view v = column.Bytes(i);
          leaf.values.AppendByteArray(reinterpret_cast<const uint8_t*>(v.data()), v.size());
        } else {
          size_t width = static_cast<size_t>(leaf.values.width);
          const uint8_t* p = column.data.data() + i * width;
          AppendBytes(leaf.values.data, p, width);
          ++leaf.values.count;
        }
        return;
      }
      case Field::Kind::kStruct:
        for (size_t k = 0; k < field.children.size(); ++k) Emit(field.children[k], column.children[k], i, rep);
        return;
      case Field::Kind::kList:
      case Field::Kind::kMap: {
        int64_t begin = column.offsets[i], end = column.offsets[i + 1];
        if (begin == end) {
          EmitNull(field, rep, static_cast<int16_t>(field.element_definition_level - 1));
          return;
        }
        for (int64_t e = begin; e < end; ++e) {
          Emit(field.children[0], column.children[0], e, e == begin ? rep : field.repetition_level);
        }
        return;
      }
    }
  }

 private:
  // A null or empty value: every leaf below gets one level pair and no value.
  void EmitNull(const Field& field, int16_t rep, int16_t def) {
    for (int c = field.first_column; c < field.first_column + field.num_columns; ++c) {
      leaves_[c]->Levels(rep, def);
      ++leaves_[c]->null_count;
    }
  }

  std::vector<FileWriter::Leaf*> leaves_;
};

}  // namespace

// ---- file ----

FileWriter::FileWriter(std::string path, std::vector<WriteField> fields, WriterOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  if (options_.data_page_version != 1 && options_.data_page_version != 2) {
    throw InvalidError("data page version " + std::to_string(options_.data_page_version) + ", expected 1 or 2");
  }
  if (options_.row_group_max_rows <= 0 || options_.page_max_bytes <= 0 || options_.row_group_max_bytes <= 0) {
    throw InvalidError("row group and page limits must be positive");
  }
  Compress(options_.codec, nullptr, 0);  // rejects codecs the writer does not offer
  elements_ = ToSchemaElements(fields);
  schema_ = std::make_shared<const Schema>(Schema::FromElements(elements_));
  for (const ColumnDescriptor& column : schema_->columns()) {
    auto leaf = std::make_unique<Leaf>();
    leaf->column = &column;
    leaf->Reset();
    leaves_.push_back(std::move(leaf));
  }
  std::random_device rd;
  temp_path_ = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw SystemError("cannot create", temp_path_, errno);
  WriteBytes("PAR1");
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!closed_) ::unlink(temp_path_.c_str());
}

void FileWriter::WriteBytes(const std::string& bytes) {
  WriteAll(fd_, bytes, temp_path_);
  offset_ += bytes.size();
}

void FileWriter::Write(const RecordBatch& batch) {
  if (closed_) throw InvalidError("write to '" + path_ + "' after Close()");
  const std::vector<Field>& fields = schema_->fields();
  if (batch.columns.size() != fields.size()) {
    throw InvalidError("batch has " + std::to_string(batch.columns.size()) + " columns, the schema of '" + path_ +
                       "' has " + std::to_string(fields.size()));
  }
  for (size_t c = 0; c < fields.size(); ++c) {
    if (batch.columns[c].length != batch.num_rows) {
      throw InvalidError("column '" + fields[c].name + "' has " + std::to_string(batch.columns[c].length) +
                         " rows, the batch " + std::to_string(batch.num_rows));
    }
    Shredder::Validate(fields[c], batch.columns[c]);
  }
  std::vector<Leaf*> leaves;
  for (auto& leaf : leaves_) leaves.push_back(leaf.get());
  Shredder shredder(leaves);
  for (int64_t row = 0; row < batch.num_rows; ++row) {
    for (size_t c = 0; c < fields.size(); ++c) shredder.Emit(fields[c], batch.columns[c], row, 0);
    ++buffered_rows_;
    if (buffered_rows_ >= options_.row_group_max_rows) {
      FlushRowGroup();
    } else if (buffered_rows_ % 1024 == 0) {
      size_t bytes = 0;
      for (const auto& leaf : leaves_) bytes += leaf->BufferedBytes();
      if (static_cast<int64_t>(bytes) >= options_.row_group_max_bytes) FlushRowGroup();
    }
  }
}

namespace {

// Orders values of one column for statistics: by the logical type's sort order.
struct StatsOrder {
  PhysicalType physical;
  bool unsigned_int;
  // < 0, 0, > 0 as memcmp does.
  int Compare(const uint8_t* a, size_t a_len, const uint8_t* b, size_t b_len) const {
    switch (physical) {
      case PhysicalType::kBoolean: return static_cast<int>(a[0]) - static_cast<int>(b[0]);
      case PhysicalType::kInt32: {
        int32_t x, y;
        std::memcpy(&x, a, 4);
        std::memcpy(&y, b, 4);
        if (unsigned_int) return static_cast<uint32_t>(x) < static_cast<uint32_t>(y) ? -1 : static_cast<uint32_t>(x) > static_cast<uint32_t>(y);
        return x < y ? -1 : x > y;
      }
      case PhysicalType::kInt64: {
        int64_t x, y;
        std::memcpy(&x, a, 8);
        std::memcpy(&y, b, 8);
        if (unsigned_int) return static_cast<uint64_t>(x) < static_cast<uint64_t>(y) ? -1 : static_cast<uint64_t>(x) > static_cast<uint64_t>(y);
        return x < y ? -1 : x > y;
      }
      case PhysicalType::kFloat: {
        float x, y;
        std::memcpy(&x, a, 4);
        std::memcpy(&y, b, 4);
        return x < y ? -1 : x > y;
      }
      case PhysicalType::kDouble: {
        double x, y;
        std::memcpy(&x, a, 8);
        std::memcpy(&y, b, 8);
        return x < y ? -1 : x > y;
      }
      default: {
        int c = std::memcmp(a, b, std::min(a_len, b_len));
        if (c != 0) return c;
        return a_len < b_len ? -1 : a_len > b_len;
      }
    }
  }
};

bool HasStatisticsOrder(const ColumnDescriptor& column) {
  using K = LogicalType::Kind;
  if (column.physical == PhysicalType::kInt96) return false;
  if (column.logical.kind == K::kDecimal &&
      (column.physical == PhysicalType::kByteArray || column.physical == PhysicalType::kFixedLenByteArray)) {
    return false;  // signed two's complement of varying length: not a bytewise order
  }
  return column.logical.kind != K::kFloat16 && column.logical.kind != K::kInterval;
}

Statistics ComputeStatistics(const ColumnDescriptor& column, const ValueBuffer& values, int64_t null_count) {
  Statistics stats;
  stats.null_count = null_count;
  if (!HasStatisticsOrder(column) || values.count == 0) return stats;
  StatsOrder order{column.physical, column.logical.kind == LogicalType::Kind::kInteger && !column.logical.is_signed};
  auto value = [&](int64_t i, size_t* length) -> const uint8_t* {
    if (values.is_byte_array()) {
      *length = static_cast<size_t>(values.offsets[i + 1] - values.offsets[i]);
      return values.data.data() + values.offsets[i];
    }
    *length = static_cast<size_t>(values.width);
    return values.data.data() + i * values.width;
  };
  bool floating = column.physical == PhysicalType::kFloat || column.physical == PhysicalType::kDouble;
  int64_t min_i = -1, max_i = -1;
  for (int64_t i = 0; i < values.count; ++i) {
    size_t len;
    const uint8_t* v = value(i, &len);
    if (floating) {
      double d = column.physical == PhysicalType::kFloat ? [&] { float f; std::memcpy(&f, v, 4); return double(f); }()
                                                          : [&] { double x; std::memcpy(&x, v, 8); return x; }();
      if (std::isnan(d)) continue;  // NaN has no place in min/max
    }
    size_t min_len = 0, max_len = 0;
    if (min_i < 0 || order.Compare(v, len, value(min_i, &min_len), min_len) < 0) min_i = i;
    if (max_i < 0 || order.Compare(v, len, value(max_i, &max_len), max_len) > 0) max_i = i;
  }
  if (min_i < 0) return stats;
  size_t len;
  const uint8_t* v = value(min_i, &len);
  stats.min_value = std::string(reinterpret_cast<const char*>(v), len);
  v = value(max_i, &len);
  stats.max_value = std::string(reinterpret_cast<const char*>(v), len);
  return stats;
}

// Encodes and writes one column chunk; returns its metadata.
class ChunkWriter {
 public:
  ChunkWriter(const ColumnDescriptor& column, const WriterOptions& options) : column_(column), options_(options) {}

  template <typename Write>
  ColumnMetaData WriteChunk(const FileWriter::Leaf& leaf, int64_t num_levels, uint64_t start_offset, Write&& write) {
    ColumnMetaData meta;
    meta.type = column_.physical;
    meta.path_in_schema = column_.path;
    meta.codec = options_.codec;
    meta.num_values = num_levels;
    uint64_t offset = start_offset;
    const ValueBuffer& values = leaf.values;
    bool use_dictionary = options_.dictionary && column_.physical != PhysicalType::kBoolean && BuildDictionary(values);
    if (use_dictionary) {
      std::string plain;
      EncodePlain(dictionary_, 0, dictionary_.count, &plain);
      PageHeader header;
      header.type = PageType::kDictionaryPage;
      header.dictionary_page_header = DictionaryPageHeader{static_cast<int32_t>(dictionary_.count), Encoding::kPlain, false};
      meta.dictionary_page_offset = static_cast<int64_t>(offset);
      offset += WritePage(header, "", plain, true, &meta, write);
      meta.encodings = {Encoding::kPlain, Encoding::kRle, Encoding::kRleDictionary};
    } else {
      meta.encodings = {Encoding::kPlain, Encoding::kRle};
    }
    meta.data_page_offset = static_cast<int64_t>(offset);
    // Pages of about page_max_bytes of values; a page starts at a record (repetition level 0).
    const auto& def = leaf.definition_levels;
    const auto& rep = leaf.repetition_levels;
    int64_t level = 0, value = 0;
    while (level < num_levels || (level == 0 && num_levels == 0)) {
      int64_t level_end = level, value_end = value, rows = 0;
      size_t bytes = 0;
      while (level_end < num_levels) {
        if (level_end > level && (rep.empty() || rep[level_end] == 0) &&
            static_cast<int64_t>(bytes) >= options_.page_max_bytes) {
          break;
        }
        if (rep.empty() || rep[level_end] == 0) ++rows;
        if (def.empty() || def[level_end] == column_.max_definition_level) {
          bytes += values.is_byte_array() ? values.offsets[value_end + 1] - values.offsets[value_end] + 4 : values.width;
          ++value_end;
        }
        ++level_end;
      }
      offset += WriteDataPage(leaf, level, level_end, value, value_end, rows, use_dictionary, &meta, write);
      level = level_end;
      value = value_end;
      if (num_levels == 0) break;
    }
    if (options_.statistics) meta.statistics = ComputeStatistics(column_, values, leaf.null_count);
    meta.total_compressed_size = static_cast<int64_t>(offset - start_offset);
    return meta;
  }

 private:
  bool BuildDictionary(const ValueBuffer& values) {
    dictionary_.Reset(column_.physical, column_.type_length);
    indices_.assign(static_cast<size_t>(values.count), 0);
    std::unordered_map<std::string_view, uint32_t> index;
    index.reserve(1024);
    for (int64_t i = 0; i < values.count; ++i) {
      std::string_view v = values.is_byte_array()
                               ? std::string_view(reinterpret_cast<const char*>(values.data.data() + values.offsets[i]),
                                                  static_cast<size_t>(values.offsets[i + 1] - values.offsets[i]))
                               : std::string_view(reinterpret_cast<const char*>(values.data.data() + i * values.width),
                                                  static_cast<size_t>(values.width));
      auto [it, inserted] = index.emplace(v, static_cast<uint32_t>(dictionary_.count));
      if (inserted) {
        if (values.is_byte_array()) {
          dictionary_.AppendByteArray(reinterpret_cast<const uint8_t*>(v.data()), v.size());
        } else {
          AppendBytes(dictionary_.data, v.data(), v.size());
          ++dictionary_.count;
        }
        if (static_cast<int64_t>(dictionary_.data.size()) > options_.dictionary_max_bytes) return false;
      }
      indices_[i] = it->second;
    }
    // A dictionary as large as the values saves nothing.
    return dictionary_.count < std::max<int64_t>(values.count, 2) || values.count == 0;
  }

  template <typename Write>
  uint64_t WriteDataPage(const FileWriter::Leaf& leaf, int64_t level, int64_t level_end, int64_t value,
                         int64_t value_end, int64_t rows, bool dictionary, ColumnMetaData* meta, Write&& write) {
    int64_t n = level_end - level;
    std::string rep_bytes, def_bytes, value_bytes;
    auto encode_levels = [&](const std::vector<int16_t>& levels, int max_level, std::string* out) {
      std::vector<uint32_t> v(levels.begin() + level, levels.begin() + level_end);
      EncodeRleBitPacked(v.data(), n, BitWidthOf(static_cast<uint64_t>(max_level)), out);
    };
    if (column_.max_repetition_level > 0) encode_levels(leaf.repetition_levels, column_.max_repetition_level, &rep_bytes);
    if (column_.max_definition_level > 0) encode_levels(leaf.definition_levels, column_.max_definition_level, &def_bytes);
    if (dictionary) {
      int bit_width = BitWidthOf(static_cast<uint64_t>(std::max<int64_t>(dictionary_.count - 1, 0)));
      value_bytes.push_back(static_cast<char>(bit_width));
      EncodeRleBitPacked(indices_.data() + value, value_end - value, bit_width, &value_bytes);
    } else {
      EncodePlain(leaf.values, value, value_end, &value_bytes);
    }
    PageHeader header;
    Encoding encoding = dictionary ? Encoding::kRleDictionary : Encoding::kPlain;
    int64_t nulls = n - (value_end - value);
    if (options_.data_page_version == 2) {
      header.type = PageType::kDataPageV2;
      DataPageHeaderV2 v2;
      v2.num_values = static_cast<int32_t>(n);
      v2.num_nulls = static_cast<int32_t>(nulls);
      v2.num_rows = static_cast<int32_t>(rows);
      v2.encoding = encoding;
      v2.repetition_levels_byte_length = static_cast<int32_t>(rep_bytes.size());
      v2.definition_levels_byte_length = static_cast<int32_t>(def_bytes.size());
      v2.is_compressed = options_.codec != Codec::kUncompressed;
      header.data_page_header_v2 = v2;
      return WritePage(header, rep_bytes + def_bytes, value_bytes, v2.is_compressed, meta, write);
    }
    header.type = PageType::kDataPage;
    DataPageHeader v1;
    v1.num_values = static_cast<int32_t>(n);
    v1.encoding = encoding;
    header.data_page_header = v1;
    std::string body;
    auto prefixed = [&](const std::string& levels) {
      uint32_t length = static_cast<uint32_t>(levels.size());
      body.append(reinterpret_cast<const char*>(&length), 4);
      body += levels;
    };
    if (column_.max_repetition_level > 0) prefixed(rep_bytes);
    if (column_.max_definition_level > 0) prefixed(def_bytes);
    body += value_bytes;
    return WritePage(header, "", body, true, meta, write);
  }

  // Writes header + uncompressed prefix + (compressed) body; returns the bytes written.
  template <typename Write>
  uint64_t WritePage(PageHeader header, const std::string& prefix, const std::string& body, bool compress,
                     ColumnMetaData* meta, Write&& write) {
    std::string stored = compress ? Compress(options_.codec, reinterpret_cast<const uint8_t*>(body.data()), body.size()) : body;
    std::string page = prefix + stored;
    header.uncompressed_page_size = static_cast<int32_t>(prefix.size() + body.size());
    header.compressed_page_size = static_cast<int32_t>(page.size());
    header.crc = static_cast<int32_t>(Crc32(0, reinterpret_cast<const uint8_t*>(page.data()), page.size()));
    std::string bytes = SerializePageHeader(header) + page;
    meta->total_uncompressed_size += static_cast<int64_t>(bytes.size() - stored.size() + body.size());
    write(bytes);
    return bytes.size();
  }

  const ColumnDescriptor& column_;
  const WriterOptions& options_;
  ValueBuffer dictionary_;
  std::vector<uint32_t> indices_;
};

}  // namespace

void FileWriter::FlushRowGroup() {
  if (buffered_rows_ == 0) return;
  RowGroup group;
  group.num_rows = buffered_rows_;
  group.file_offset = static_cast<int64_t>(offset_);
  uint64_t start = offset_;
  for (auto& leaf : leaves_) {
    int64_t num_levels = leaf->column->max_definition_level > 0 ? static_cast<int64_t>(leaf->definition_levels.size())
                         : leaf->column->max_repetition_level > 0 ? static_cast<int64_t>(leaf->repetition_levels.size())
                                                                   : leaf->values.count;
    ChunkWriter chunk(*leaf->column, options_);
    ColumnChunk column_chunk;
    column_chunk.file_offset = static_cast<int64_t>(offset_);
    column_chunk.meta_data = chunk.WriteChunk(*leaf, num_levels, offset_, [&](const std::string& b) { WriteBytes(b); });
    group.total_byte_size += column_chunk.meta_data->total_uncompressed_size;
    group.columns.push_back(std::move(column_chunk));
    leaf->Reset();
  }
  group.total_compressed_size = static_cast<int64_t>(offset_ - start);
  row_groups_.push_back(std::move(group));
  rows_written_ += buffered_rows_;
  buffered_rows_ = 0;
}

void FileWriter::Close() {
  if (closed_) return;
  FlushRowGroup();
  FileMetaData metadata;
  metadata.version = options_.data_page_version == 2 ? 2 : 1;
  metadata.schema = elements_;
  metadata.num_rows = rows_written_;
  metadata.row_groups = row_groups_;
  metadata.key_value_metadata = options_.key_value_metadata;
  metadata.created_by = "shoal version 0.1.0";
  std::string footer = SerializeFileMetaData(metadata);
  uint32_t length = static_cast<uint32_t>(footer.size());
  WriteBytes(footer);
  WriteBytes(std::string(reinterpret_cast<const char*>(&length), 4) + "PAR1");
  if (::fsync(fd_) != 0) throw SystemError("cannot fsync", temp_path_, errno);
  ::close(fd_);
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) throw SystemError("cannot rename into place", path_, errno);
  closed_ = true;
}

}  // namespace shoal::parquet
