// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zlib's crc32() and Parquet's page
// checksums define it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal {

/// Continues `crc` (0 to start) over `length` bytes; Crc32(0, data, n) == zlib's crc32(0, data, n).
/// Uses carry-less multiplication (PCLMULQDQ) where the CPU has it, zlib otherwise.
uint32_t Crc32(uint32_t crc, const uint8_t* data, size_t length);

/// The portable path alone (zlib), for tests.
uint32_t Crc32Portable(uint32_t crc, const uint8_t* data, size_t length);

}  // namespace shoal
