// Thrift compact protocol: a bounds-checked decoder and an encoder, enough for Parquet's metadata.
// Every length and count read is checked against the bytes that remain, nesting is limited, and
// unknown fields are skipped. Failures throw shoal::Error (kInvalid) naming the byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::parquet::thrift {

// Wire types of the compact protocol.
enum WireType : uint8_t {
  kStop = 0,
  kBoolTrue = 1,
  kBoolFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

class CompactReader {
 public:
  /// `what` names the structure for error messages ("page header", "file footer").
  CompactReader(const uint8_t* data, size_t size, std::string_view what);

  /// Enters a struct; NextField then reads its fields until STOP.
  void StructBegin();
  void StructEnd();
  /// Reads the next field header of the current struct. Returns false at STOP.
  bool NextField(int16_t* id, uint8_t* type);

  // Typed reads of a field's value; `type` is the wire type from NextField and is checked.
  bool ReadBool(uint8_t type);
  int8_t ReadI8(uint8_t type);
  int16_t ReadI16(uint8_t type);
  int32_t ReadI32(uint8_t type);
  int64_t ReadI64(uint8_t type);
  double ReadDouble(uint8_t type);
  std::string ReadString(uint8_t type);
  /// Starts a list field: returns the element count and sets `element_type`. The count is
  /// checked against the remaining bytes (every element takes at least one byte).
  uint32_t ReadListBegin(uint8_t type, uint8_t* element_type);
  /// Reads one list element of wire type `element_type` as an i32.
  int32_t ReadListI32(uint8_t element_type) { return ReadI32(element_type); }

  /// Skips a value of the given wire type, including nested structs, lists and maps.
  void Skip(uint8_t type);

  size_t position() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  [[noreturn]] void Fail(const std::string& message) const;

 private:
  uint8_t ReadByte();
  uint64_t ReadVarint();
  int64_t ReadZigzag();
  void Expect(uint8_t type, uint8_t wanted, const char* name) const;
  void SkipDepth(uint8_t type, int depth);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string what_;
  std::vector<int16_t> last_field_id_;
  int16_t current_field_id_ = 0;
};

class CompactWriter {
 public:
  void StructBegin();
  void StructEnd();  // writes STOP
  void FieldBool(int16_t id, bool value);
  void FieldI8(int16_t id, int8_t value);
  void FieldI32(int16_t id, int32_t value);
  void FieldI64(int16_t id, int64_t value);
  void FieldBinary(int16_t id, std::string_view value);
  /// Starts a struct-valued field; close it with StructEnd().
  void FieldStructBegin(int16_t id);
  /// Starts a list field; then write `size` elements with the List* calls or StructBegin.
  void FieldListBegin(int16_t id, uint8_t element_type, uint32_t size);
  void ListI32(int32_t value);
  void ListI64(int64_t value);
  void ListBinary(std::string_view value);

  const std::string& buffer() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void FieldHeader(int16_t id, uint8_t type);
  void Varint(uint64_t value);
  void Zigzag(int64_t value);

  std::string out_;
  std::vector<int16_t> last_field_id_;
  int16_t current_field_id_ = 0;
};

}  // namespace shoal::parquet::thrift
