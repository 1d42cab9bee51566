// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zlib's crc32() and Parquet's page
// checksums define it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal {

/// Continues `crc` (0 to start) over `length` bytes; Crc32(0, data, n) == zlib's crc32(0, data, n).
/// Uses carry-less multiplication where the CPU has it (VPCLMULQDQ on AVX-512, else PCLMULQDQ),
/// zlib otherwise.
uint32_t Crc32(uint32_t crc, const uint8_t* data, size_t length);

/// The implementations Crc32 chooses between, so tests can run each one the CPU supports.
enum class Crc32Kernel { kPortable, kPclmul, kVpclmul };
bool Crc32KernelAvailable(Crc32Kernel kernel);
/// Crc32 with the given kernel; the caller checks Crc32KernelAvailable first.
uint32_t Crc32With(Crc32Kernel kernel, uint32_t crc, const uint8_t* data, size_t length);

/// The portable path alone (zlib).
uint32_t Crc32Portable(uint32_t crc, const uint8_t* data, size_t length);

}  // namespace shoal
