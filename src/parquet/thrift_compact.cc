#include "parquet/thrift_compact.h"

#include <cstring>

#include "util/error.h"

namespace shoal::parquet::thrift {

namespace {
constexpr int kMaxNesting = 64;

const char* WireTypeName(uint8_t type) {
  switch (type) {
    case kStop: return "stop";
    case kBoolTrue:
    case kBoolFalse: return "bool";
    case kByte: return "i8";
    case kI16: return "i16";
    case kI32: return "i32";
    case kI64: return "i64";
    case kDouble: return "double";
    case kBinary: return "binary";
    case kList: return "list";
    case kSet: return "set";
    case kMap: return "map";
    case kStruct: return "struct";
  }
  return "invalid";
}
}  // namespace

CompactReader::CompactReader(const uint8_t* data, size_t size, std::string_view what)
    : data_(data), size_(size), what_(what) {}

void CompactReader::Fail(const std::string& message) const {
  throw InvalidError("corrupt " + what_ + " (thrift compact encoding) at byte " +
                     std::to_string(pos_) + " of " + std::to_string(size_) + ": " + message);
}

uint8_t CompactReader::ReadByte() {
  if (pos_ >= size_) Fail("unexpected end of data");
  return data_[pos_++];
}

uint64_t CompactReader::ReadVarint() {
  uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    uint8_t byte = ReadByte();
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return result;
  }
  Fail("varint longer than 10 bytes");
}

int64_t CompactReader::ReadZigzag() {
  uint64_t v = ReadVarint();
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

void CompactReader::Expect(uint8_t type, uint8_t wanted, const char* name) const {
  if (type != wanted) {
    Fail(std::string("expected a field of type ") + name + ", found " + WireTypeName(type));
  }
}

void CompactReader::StructBegin() {
  if (last_field_id_.size() >= kMaxNesting) Fail("structs nested deeper than 64");
  last_field_id_.push_back(current_field_id_);
  current_field_id_ = 0;
}

void CompactReader::StructEnd() {
  current_field_id_ = last_field_id_.back();
  last_field_id_.pop_back();
}

bool CompactReader::NextField(int16_t* id, uint8_t* type) {
  uint8_t header = ReadByte();
  *type = header & 0x0f;
  if (*type == kStop) return false;
  if (*type > kStruct) Fail("invalid field type " + std::to_string(*type));
  int delta = header >> 4;
  if (delta == 0) {
    int64_t raw = ReadZigzag();
    if (raw < INT16_MIN || raw > INT16_MAX) Fail("field id out of range");
    current_field_id_ = static_cast<int16_t>(raw);
  } else {
    current_field_id_ = static_cast<int16_t>(current_field_id_ + delta);
  }
  *id = current_field_id_;
  return true;
}

bool CompactReader::ReadBool(uint8_t type) {
  if (type == kBoolTrue) return true;
  if (type == kBoolFalse) return false;
  Fail(std::string("expected a field of type bool, found ") + WireTypeName(type));
}

int8_t CompactReader::ReadI8(uint8_t type) {
  Expect(type, kByte, "i8");
  return static_cast<int8_t>(ReadByte());
}

int16_t CompactReader::ReadI16(uint8_t type) {
  Expect(type, kI16, "i16");
  int64_t v = ReadZigzag();
  if (v < INT16_MIN || v > INT16_MAX) Fail("i16 value out of range");
  return static_cast<int16_t>(v);
}

int32_t CompactReader::ReadI32(uint8_t type) {
  Expect(type, kI32, "i32");
  int64_t v = ReadZigzag();
  if (v < INT32_MIN || v > INT32_MAX) Fail("i32 value out of range");
  return static_cast<int32_t>(v);
}

int64_t CompactReader::ReadI64(uint8_t type) {
  Expect(type, kI64, "i64");
  return ReadZigzag();
}

double CompactReader::ReadDouble(uint8_t type) {
  Expect(type, kDouble, "double");
  if (remaining() < 8) Fail("double runs past the end");
  double v;
  std::memcpy(&v, data_ + pos_, 8);
  pos_ += 8;
  return v;
}

std::string CompactReader::ReadString(uint8_t type) {
  Expect(type, kBinary, "binary");
  uint64_t length = ReadVarint();
  if (length > remaining()) {
    Fail("binary of " + std::to_string(length) + " bytes, but only " +
         std::to_string(remaining()) + " remain");
  }
  std::string s(reinterpret_cast<const char*>(data_ + pos_), length);
  pos_ += length;
  return s;
}

uint32_t CompactReader::ReadListBegin(uint8_t type, uint8_t* element_type) {
  if (type != kList && type != kSet) {
    Fail(std::string("expected a field of type list, found ") + WireTypeName(type));
  }
  uint8_t header = ReadByte();
  *element_type = header & 0x0f;
  uint64_t size = header >> 4;
  if (size == 15) size = ReadVarint();
  if (size > remaining()) {
    Fail("list of " + std::to_string(size) + " elements, but only " +
         std::to_string(remaining()) + " bytes remain");
  }
  if (size > 0 && (*element_type == kStop || *element_type > kStruct)) {
    Fail("invalid list element type " + std::to_string(*element_type));
  }
  return static_cast<uint32_t>(size);
}

void CompactReader::Skip(uint8_t type) { SkipDepth(type, 0); }

void CompactReader::SkipDepth(uint8_t type, int depth) {
  if (depth > kMaxNesting) Fail("values nested deeper than 64");
  switch (type) {
    case kBoolTrue:
    case kBoolFalse: return;  // the value is in the type nibble
    case kByte: ReadByte(); return;
    case kI16:
    case kI32:
    case kI64: ReadVarint(); return;
    case kDouble:
      if (remaining() < 8) Fail("double runs past the end");
      pos_ += 8;
      return;
    case kBinary: {
      uint64_t length = ReadVarint();
      if (length > remaining()) Fail("binary runs past the end");
      pos_ += length;
      return;
    }
    case kList:
    case kSet: {
      uint8_t element_type;
      uint32_t n = ReadListBegin(type, &element_type);
      for (uint32_t i = 0; i < n; ++i) {
        if (element_type == kBoolTrue || element_type == kBoolFalse) {
          ReadByte();
        } else {
          SkipDepth(element_type, depth + 1);
        }
      }
      return;
    }
    case kMap: {
      uint64_t n = ReadVarint();
      if (n == 0) return;
      if (n > remaining()) Fail("map of " + std::to_string(n) + " entries runs past the end");
      uint8_t types = ReadByte();
      uint8_t key_type = types >> 4, value_type = types & 0x0f;
      for (uint64_t i = 0; i < n; ++i) {
        for (uint8_t t : {key_type, value_type}) {
          if (t == kBoolTrue || t == kBoolFalse) {
            ReadByte();
          } else {
            SkipDepth(t, depth + 1);
          }
        }
      }
      return;
    }
    case kStruct: {
      StructBegin();
      int16_t id;
      uint8_t field_type;
      while (NextField(&id, &field_type)) SkipDepth(field_type, depth + 1);
      StructEnd();
      return;
    }
    default: Fail("cannot skip a value of invalid type " + std::to_string(type));
  }
}

// ---- writer ----

void CompactWriter::Varint(uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void CompactWriter::Zigzag(int64_t value) {
  Varint((static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63));
}

void CompactWriter::FieldHeader(int16_t id, uint8_t type) {
  int delta = id - current_field_id_;
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<char>((delta << 4) | type));
  } else {
    out_.push_back(static_cast<char>(type));
    Zigzag(id);
  }
  current_field_id_ = id;
}

void CompactWriter::StructBegin() {
  last_field_id_.push_back(current_field_id_);
  current_field_id_ = 0;
}

void CompactWriter::StructEnd() {
  out_.push_back(static_cast<char>(kStop));
  current_field_id_ = last_field_id_.back();
  last_field_id_.pop_back();
}

void CompactWriter::FieldBool(int16_t id, bool value) {
  FieldHeader(id, value ? kBoolTrue : kBoolFalse);
}

void CompactWriter::FieldI8(int16_t id, int8_t value) {
  FieldHeader(id, kByte);
  out_.push_back(static_cast<char>(value));
}

void CompactWriter::FieldI32(int16_t id, int32_t value) {
  FieldHeader(id, kI32);
  Zigzag(value);
}

void CompactWriter::FieldI64(int16_t id, int64_t value) {
  FieldHeader(id, kI64);
  Zigzag(value);
}

void CompactWriter::FieldBinary(int16_t id, std::string_view value) {
  FieldHeader(id, kBinary);
  Varint(value.size());
  out_.append(value);
}

void CompactWriter::FieldStructBegin(int16_t id) {
  FieldHeader(id, kStruct);
  StructBegin();
}

void CompactWriter::FieldListBegin(int16_t id, uint8_t element_type, uint32_t size) {
  FieldHeader(id, kList);
  if (size < 15) {
    out_.push_back(static_cast<char>((size << 4) | element_type));
  } else {
    out_.push_back(static_cast<char>(0xf0 | element_type));
    Varint(size);
  }
}

void CompactWriter::ListI32(int32_t value) { Zigzag(value); }
void CompactWriter::ListI64(int64_t value) { Zigzag(value); }
void CompactWriter::ListBinary(std::string_view value) {
  Varint(value.size());
  out_.append(value);
}

}  // namespace shoal::parquet::thrift
