// Deletion vectors (PROTOCOL.md, "Deletion Vector Format"): the rows of a data file that are
// deleted, stored inline in the log (Z85) or in a file, as a 64-bit RoaringBitmap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::delta {

struct DeletionVectorDescriptor {
  std::string storage_type;    // "u" (relative, UUID-named), "i" (inline), "p" (absolute path)
  std::string path_or_inline;
  std::optional<int64_t> offset;
  int64_t size_in_bytes = 0;
  int64_t cardinality = 0;
};

/// Decodes Z85 (ZeroMQ's base-85): 5 characters to 4 bytes. Throws InvalidError.
std::string Z85Decode(std::string_view text);

/// Decodes a serialized 64-bit RoaringBitmap with Delta's magic number into sorted row indexes.
/// Throws InvalidError naming what is malformed; never reads past `size`.
std::vector<uint64_t> DecodeRoaringBitmapArray(const uint8_t* data, size_t size);

/// The deleted row indexes of a data file of the table at `table_path`, sorted. Reads the DV
/// file when stored on disk and checks its CRC and size. Throws NotFoundError, InvalidError,
/// UnsupportedError (an unknown storage type), naming the deletion vector.
std::vector<uint64_t> LoadDeletionVector(const std::string& table_path, const DeletionVectorDescriptor& dv);

}  // namespace shoal::delta
