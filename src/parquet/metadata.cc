#include "parquet/metadata.h"

#include "parquet/thrift_compact.h"
#include "util/error.h"

namespace shoal::parquet {

using thrift::CompactReader;
using thrift::CompactWriter;

namespace {

// Reads the fields of a struct, calling on_field(id, type) for each; fields it does not consume
// (returns false) are skipped, so unknown fields from newer writers are ignored.
template <typename F>
void ReadStruct(CompactReader& r, F&& on_field) {
  r.StructBegin();
  int16_t id;
  uint8_t type;
  while (r.NextField(&id, &type)) {
    if (!on_field(id, type)) r.Skip(type);
  }
  r.StructEnd();
}

template <typename F>
void ReadList(CompactReader& r, uint8_t type, F&& on_element) {
  uint8_t element_type;
  uint32_t n = r.ReadListBegin(type, &element_type);
  for (uint32_t i = 0; i < n; ++i) on_element(element_type);
}

void ExpectStructElement(CompactReader& r, uint8_t element_type) {
  if (element_type != thrift::kStruct) r.Fail("expected a list of structs");
}

Statistics ReadStatistics(CompactReader& r) {
  Statistics s;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    switch (id) {
      case 1: s.max = r.ReadString(type); return true;
      case 2: s.min = r.ReadString(type); return true;
      case 3: s.null_count = r.ReadI64(type); return true;
      case 4: s.distinct_count = r.ReadI64(type); return true;
      case 5: s.max_value = r.ReadString(type); return true;
      case 6: s.min_value = r.ReadString(type); return true;
      default: return false;
    }
  });
  return s;
}

TimeUnit ReadTimeUnit(CompactReader& r) {
  TimeUnit unit = TimeUnit::kMillis;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    if (id >= 1 && id <= 3) unit = static_cast<TimeUnit>(id);
    return false;  // the member is an empty struct: skip it
  });
  return unit;
}

LogicalType ReadLogicalType(CompactReader& r) {
  using K = LogicalType::Kind;
  LogicalType t;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    switch (id) {
      case 1: t.kind = K::kString; return false;
      case 2: t.kind = K::kMap; return false;
      case 3: t.kind = K::kList; return false;
      case 4: t.kind = K::kEnum; return false;
      case 5:
        t.kind = K::kDecimal;
        ReadStruct(r, [&](int16_t f, uint8_t ft) {
          if (f == 1) t.scale = r.ReadI32(ft);
          else if (f == 2) t.precision = r.ReadI32(ft);
          else return false;
          return true;
        });
        return true;
      case 6: t.kind = K::kDate; return false;
      case 7:
      case 8:
        t.kind = id == 7 ? K::kTime : K::kTimestamp;
        ReadStruct(r, [&](int16_t f, uint8_t ft) {
          if (f == 1) t.utc_adjusted = r.ReadBool(ft);
          else if (f == 2) t.unit = ReadTimeUnit(r);
          else return false;
          return true;
        });
        return true;
      case 10:
        t.kind = K::kInteger;
        ReadStruct(r, [&](int16_t f, uint8_t ft) {
          if (f == 1) t.bit_width = r.ReadI8(ft);
          else if (f == 2) t.is_signed = r.ReadBool(ft);
          else return false;
          return true;
        });
        return true;
      case 11: t.kind = K::kUnknown; return false;
      case 12: t.kind = K::kJson; return false;
      case 13: t.kind = K::kBson; return false;
      case 14: t.kind = K::kUuid; return false;
      case 15: t.kind = K::kFloat16; return false;
      default: t.kind = K::kOther; return false;
    }
  });
  return t;
}

SchemaElement ReadSchemaElement(CompactReader& r) {
  SchemaElement e;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    switch (id) {
      case 1: {
        int32_t v = r.ReadI32(type);
        if (v < 0 || v > 7) r.Fail("unknown physical type " + std::to_string(v));
        e.type = static_cast<PhysicalType>(v);
        return true;
      }
      case 2: e.type_length = r.ReadI32(type); return true;
      case 3: {
        int32_t v = r.ReadI32(type);
        if (v < 0 || v > 2) r.Fail("unknown repetition type " + std::to_string(v));
        e.repetition = static_cast<Repetition>(v);
        return true;
      }
      case 4: e.name = r.ReadString(type); return true;
      case 5: e.num_children = r.ReadI32(type); return true;
      case 6: e.converted_type = static_cast<ConvertedType>(r.ReadI32(type)); return true;
      case 7: e.scale = r.ReadI32(type); return true;
      case 8: e.precision = r.ReadI32(type); return true;
      case 9: e.field_id = r.ReadI32(type); return true;
      case 10: e.logical_type = ReadLogicalType(r); return true;
      default: return false;
    }
  });
  return e;
}

KeyValue ReadKeyValue(CompactReader& r) {
  KeyValue kv;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    if (id == 1) kv.key = r.ReadString(type);
    else if (id == 2) kv.value = r.ReadString(type);
    else return false;
    return true;
  });
  return kv;
}

ColumnMetaData ReadColumnMetaData(CompactReader& r) {
  ColumnMetaData m;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    switch (id) {
      case 1: {
        int32_t v = r.ReadI32(type);
        if (v < 0 || v > 7) r.Fail("unknown physical type " + std::to_string(v));
        m.type = static_cast<PhysicalType>(v);
        return true;
      }
      case 2:
        ReadList(r, type, [&](uint8_t et) {
          m.encodings.push_back(static_cast<Encoding>(r.ReadListI32(et)));
        });
        return true;
      case 3:
        ReadList(r, type, [&](uint8_t et) { m.path_in_schema.push_back(r.ReadString(et)); });
        return true;
      case 4: m.codec = static_cast<Codec>(r.ReadI32(type)); return true;
      case 5: m.num_values = r.ReadI64(type); return true;
      case 6: m.total_uncompressed_size = r.ReadI64(type); return true;
      case 7: m.total_compressed_size = r.ReadI64(type); return true;
      case 8:
        ReadList(r, type, [&](uint8_t et) {
          ExpectStructElement(r, et);
          m.key_value_metadata.push_back(ReadKeyValue(r));
        });
        return true;
      case 9: m.data_page_offset = r.ReadI64(type); return true;
      case 10: m.index_page_offset = r.ReadI64(type); return true;
      case 11: m.dictionary_page_offset = r.ReadI64(type); return true;
      case 12: m.statistics = ReadStatistics(r); return true;
      default: return false;
    }
  });
  return m;
}

ColumnChunk ReadColumnChunk(CompactReader& r) {
  ColumnChunk c;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    switch (id) {
      case 1: c.file_path = r.ReadString(type); return true;
      case 2: c.file_offset = r.ReadI64(type); return true;
      case 3: c.meta_data = ReadColumnMetaData(r); return true;
      case 8:
      case 9: c.encrypted = true; return false;
      default: return false;
    }
  });
  return c;
}

RowGroup ReadRowGroup(CompactReader& r) {
  RowGroup g;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    switch (id) {
      case 1:
        ReadList(r, type, [&](uint8_t et) {
          ExpectStructElement(r, et);
          g.columns.push_back(ReadColumnChunk(r));
        });
        return true;
      case 2: g.total_byte_size = r.ReadI64(type); return true;
      case 3: g.num_rows = r.ReadI64(type); return true;
      case 5: g.file_offset = r.ReadI64(type); return true;
      case 6: g.total_compressed_size = r.ReadI64(type); return true;
      default: return false;
    }
  });
  return g;
}

Encoding ReadEncoding(CompactReader& r, uint8_t type) {
  return static_cast<Encoding>(r.ReadI32(type));
}

}  // namespace

FileMetaData ParseFileMetaData(const uint8_t* data, size_t size) {
  CompactReader r(data, size, "file footer");
  FileMetaData f;
  bool has_schema = false, has_row_groups = false;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    switch (id) {
      case 1: f.version = r.ReadI32(type); return true;
      case 2:
        has_schema = true;
        ReadList(r, type, [&](uint8_t et) {
          ExpectStructElement(r, et);
          f.schema.push_back(ReadSchemaElement(r));
        });
        return true;
      case 3: f.num_rows = r.ReadI64(type); return true;
      case 4:
        has_row_groups = true;
        ReadList(r, type, [&](uint8_t et) {
          ExpectStructElement(r, et);
          f.row_groups.push_back(ReadRowGroup(r));
        });
        return true;
      case 5:
        ReadList(r, type, [&](uint8_t et) {
          ExpectStructElement(r, et);
          f.key_value_metadata.push_back(ReadKeyValue(r));
        });
        return true;
      case 6: f.created_by = r.ReadString(type); return true;
      case 8: f.encrypted_footer_algorithm = true; return false;
      default: return false;
    }
  });
  if (!has_schema) r.Fail("FileMetaData has no schema (required field 2)");
  if (!has_row_groups) r.Fail("FileMetaData has no row_groups (required field 4)");
  return f;
}

PageHeader ParsePageHeader(const uint8_t* data, size_t size, size_t* header_size) {
  CompactReader r(data, size, "page header");
  PageHeader h;
  bool has_type = false;
  ReadStruct(r, [&](int16_t id, uint8_t type) {
    switch (id) {
      case 1: {
        int32_t v = r.ReadI32(type);
        if (v < 0 || v > 3) r.Fail("unknown page type " + std::to_string(v));
        h.type = static_cast<PageType>(v);
        has_type = true;
        return true;
      }
      case 2: h.uncompressed_page_size = r.ReadI32(type); return true;
      case 3: h.compressed_page_size = r.ReadI32(type); return true;
      case 4: h.crc = r.ReadI32(type); return true;
      case 5: {
        DataPageHeader d;
        ReadStruct(r, [&](int16_t f, uint8_t ft) {
          switch (f) {
            case 1: d.num_values = r.ReadI32(ft); return true;
            case 2: d.encoding = ReadEncoding(r, ft); return true;
            case 3: d.definition_level_encoding = ReadEncoding(r, ft); return true;
            case 4: d.repetition_level_encoding = ReadEncoding(r, ft); return true;
            case 5: d.statistics = ReadStatistics(r); return true;
            default: return false;
          }
        });
        h.data_page_header = d;
        return true;
      }
      case 7: {
        DictionaryPageHeader d;
        ReadStruct(r, [&](int16_t f, uint8_t ft) {
          switch (f) {
            case 1: d.num_values = r.ReadI32(ft); return true;
            case 2: d.encoding = ReadEncoding(r, ft); return true;
            case 3: d.is_sorted = r.ReadBool(ft); return true;
            default: return false;
          }
        });
        h.dictionary_page_header = d;
        return true;
      }
      case 8: {
        DataPageHeaderV2 d;
        ReadStruct(r, [&](int16_t f, uint8_t ft) {
          switch (f) {
            case 1: d.num_values = r.ReadI32(ft); return true;
            case 2: d.num_nulls = r.ReadI32(ft); return true;
            case 3: d.num_rows = r.ReadI32(ft); return true;
            case 4: d.encoding = ReadEncoding(r, ft); return true;
            case 5: d.definition_levels_byte_length = r.ReadI32(ft); return true;
            case 6: d.repetition_levels_byte_length = r.ReadI32(ft); return true;
            case 7: d.is_compressed = r.ReadBool(ft); return true;
            case 8: d.statistics = ReadStatistics(r); return true;
            default: return false;
          }
        });
        h.data_page_header_v2 = d;
        return true;
      }
      default: return false;
    }
  });
  if (!has_type) r.Fail("page header has no type (required field 1)");
  if (h.compressed_page_size < 0 || h.uncompressed_page_size < 0) {
    r.Fail("negative page size (compressed " + std::to_string(h.compressed_page_size) +
           ", uncompressed " + std::to_string(h.uncompressed_page_size) + ")");
  }
  *header_size = r.position();
  return h;
}

// ---- serialization ----

namespace {

void WriteStatistics(CompactWriter& w, int16_t id, const Statistics& s) {
  w.FieldStructBegin(id);
  if (s.max) w.FieldBinary(1, *s.max);
  if (s.min) w.FieldBinary(2, *s.min);
  if (s.null_count) w.FieldI64(3, *s.null_count);
  if (s.distinct_count) w.FieldI64(4, *s.distinct_count);
  if (s.max_value) w.FieldBinary(5, *s.max_value);
  if (s.min_value) w.FieldBinary(6, *s.min_value);
  w.StructEnd();
}

void WriteKeyValues(CompactWriter& w, int16_t id, const std::vector<KeyValue>& kvs) {
  w.FieldListBegin(id, thrift::kStruct, static_cast<uint32_t>(kvs.size()));
  for (const KeyValue& kv : kvs) {
    w.StructBegin();
    w.FieldBinary(1, kv.key);
    if (kv.value) w.FieldBinary(2, *kv.value);
    w.StructEnd();
  }
}

void WriteEmptyStruct(CompactWriter& w, int16_t id) {
  w.FieldStructBegin(id);
  w.StructEnd();
}

void WriteLogicalType(CompactWriter& w, const LogicalType& t) {
  using K = LogicalType::Kind;
  w.FieldStructBegin(10);
  switch (t.kind) {
    case K::kString: WriteEmptyStruct(w, 1); break;
    case K::kMap: WriteEmptyStruct(w, 2); break;
    case K::kList: WriteEmptyStruct(w, 3); break;
    case K::kEnum: WriteEmptyStruct(w, 4); break;
    case K::kDecimal:
      w.FieldStructBegin(5);
      w.FieldI32(1, t.scale);
      w.FieldI32(2, t.precision);
      w.StructEnd();
      break;
    case K::kDate: WriteEmptyStruct(w, 6); break;
    case K::kTime:
    case K::kTimestamp:
      w.FieldStructBegin(t.kind == K::kTime ? 7 : 8);
      w.FieldBool(1, t.utc_adjusted);
      w.FieldStructBegin(2);
      WriteEmptyStruct(w, static_cast<int16_t>(t.unit));
      w.StructEnd();
      w.StructEnd();
      break;
    case K::kInteger:
      w.FieldStructBegin(10);
      w.FieldI8(1, static_cast<int8_t>(t.bit_width));
      w.FieldBool(2, t.is_signed);
      w.StructEnd();
      break;
    case K::kUnknown: WriteEmptyStruct(w, 11); break;
    case K::kJson: WriteEmptyStruct(w, 12); break;
    case K::kBson: WriteEmptyStruct(w, 13); break;
    case K::kUuid: WriteEmptyStruct(w, 14); break;
    case K::kFloat16: WriteEmptyStruct(w, 15); break;
    default: break;
  }
  w.StructEnd();
}

}  // namespace

std::string SerializeFileMetaData(const FileMetaData& f) {
  CompactWriter w;
  w.StructBegin();
  w.FieldI32(1, f.version);
  w.FieldListBegin(2, thrift::kStruct, static_cast<uint32_t>(f.schema.size()));
  for (const SchemaElement& e : f.schema) {
    w.StructBegin();
    if (e.type) w.FieldI32(1, static_cast<int32_t>(*e.type));
    if (e.type && *e.type == PhysicalType::kFixedLenByteArray) w.FieldI32(2, e.type_length);
    if (e.repetition) w.FieldI32(3, static_cast<int32_t>(*e.repetition));
    w.FieldBinary(4, e.name);
    if (!e.type) w.FieldI32(5, e.num_children);
    if (e.converted_type != ConvertedType::kNone) {
      w.FieldI32(6, static_cast<int32_t>(e.converted_type));
    }
    if (e.converted_type == ConvertedType::kDecimal) {
      w.FieldI32(7, e.scale);
      w.FieldI32(8, e.precision);
    }
    if (e.field_id) w.FieldI32(9, *e.field_id);
    if (e.logical_type && e.logical_type->kind != LogicalType::Kind::kNone) {
      WriteLogicalType(w, *e.logical_type);
    }
    w.StructEnd();
  }
  w.FieldI64(3, f.num_rows);
  w.FieldListBegin(4, thrift::kStruct, static_cast<uint32_t>(f.row_groups.size()));
  for (const RowGroup& g : f.row_groups) {
    w.StructBegin();
    w.FieldListBegin(1, thrift::kStruct, static_cast<uint32_t>(g.columns.size()));
    for (const ColumnChunk& c : g.columns) {
      w.StructBegin();
      w.FieldI64(2, c.file_offset);
      if (c.meta_data) {
        const ColumnMetaData& m = *c.meta_data;
        w.FieldStructBegin(3);
        w.FieldI32(1, static_cast<int32_t>(m.type));
        w.FieldListBegin(2, thrift::kI32, static_cast<uint32_t>(m.encodings.size()));
        for (Encoding e : m.encodings) w.ListI32(static_cast<int32_t>(e));
        w.FieldListBegin(3, thrift::kBinary, static_cast<uint32_t>(m.path_in_schema.size()));
        for (const std::string& p : m.path_in_schema) w.ListBinary(p);
        w.FieldI32(4, static_cast<int32_t>(m.codec));
        w.FieldI64(5, m.num_values);
        w.FieldI64(6, m.total_uncompressed_size);
        w.FieldI64(7, m.total_compressed_size);
        if (!m.key_value_metadata.empty()) WriteKeyValues(w, 8, m.key_value_metadata);
        w.FieldI64(9, m.data_page_offset);
        if (m.index_page_offset) w.FieldI64(10, *m.index_page_offset);
        if (m.dictionary_page_offset) w.FieldI64(11, *m.dictionary_page_offset);
        if (m.statistics) WriteStatistics(w, 12, *m.statistics);
        w.StructEnd();
      }
      w.StructEnd();
    }
    w.FieldI64(2, g.total_byte_size);
    w.FieldI64(3, g.num_rows);
    if (g.file_offset) w.FieldI64(5, *g.file_offset);
    if (g.total_compressed_size) w.FieldI64(6, *g.total_compressed_size);
    w.StructEnd();
  }
  if (!f.key_value_metadata.empty()) WriteKeyValues(w, 5, f.key_value_metadata);
  if (f.created_by) w.FieldBinary(6, *f.created_by);
  w.StructEnd();
  return w.Take();
}

std::string SerializePageHeader(const PageHeader& h) {
  CompactWriter w;
  w.StructBegin();
  w.FieldI32(1, static_cast<int32_t>(h.type));
  w.FieldI32(2, h.uncompressed_page_size);
  w.FieldI32(3, h.compressed_page_size);
  if (h.crc) w.FieldI32(4, *h.crc);
  if (h.data_page_header) {
    const DataPageHeader& d = *h.data_page_header;
    w.FieldStructBegin(5);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, static_cast<int32_t>(d.encoding));
    w.FieldI32(3, static_cast<int32_t>(d.definition_level_encoding));
    w.FieldI32(4, static_cast<int32_t>(d.repetition_level_encoding));
    if (d.statistics) WriteStatistics(w, 5, *d.statistics);
    w.StructEnd();
  }
  if (h.dictionary_page_header) {
    const DictionaryPageHeader& d = *h.dictionary_page_header;
    w.FieldStructBegin(7);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, static_cast<int32_t>(d.encoding));
    w.StructEnd();
  }
  if (h.data_page_header_v2) {
    const DataPageHeaderV2& d = *h.data_page_header_v2;
    w.FieldStructBegin(8);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, d.num_nulls);
    w.FieldI32(3, d.num_rows);
    w.FieldI32(4, static_cast<int32_t>(d.encoding));
    w.FieldI32(5, d.definition_levels_byte_length);
    w.FieldI32(6, d.repetition_levels_byte_length);
    w.FieldBool(7, d.is_compressed);
    w.StructEnd();
  }
  w.StructEnd();
  return w.Take();
}

}  // namespace shoal::parquet
