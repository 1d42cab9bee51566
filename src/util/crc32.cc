#include "util/crc32.h"

#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SHOAL_HAVE_PCLMUL 1
#endif

namespace shoal {

uint32_t Crc32Portable(uint32_t crc, const uint8_t* data, size_t length) {
  while (length > 0) {
    uInt chunk = length > (1u << 30) ? (1u << 30) : static_cast<uInt>(length);
    crc = static_cast<uint32_t>(crc32(crc, data, chunk));
    data += chunk;
    length -= chunk;
  }
  return crc;
}

#ifdef SHOAL_HAVE_PCLMUL
namespace {

// x * (k.lo, k.hi) folded onto `next`.
__attribute__((target("pclmul,sse4.1"), always_inline)) inline __m128i fold(__m128i x, __m128i k, __m128i next) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

// Folds 64 bytes at a time with carry-less multiplication, then reduces 128 bits to the 32-bit
// remainder by Barrett reduction (Gopal et al., "Fast CRC Computation for Generic Polynomials
// Using PCLMULQDQ", Intel, 2009). `crc` is the raw (non-inverted) register; `length` is at
// least 64 and a multiple of 16.
__attribute__((target("pclmul,sse4.1"))) uint32_t FoldPclmul(uint32_t crc, const uint8_t* p, size_t length) {
  // x^(4*128+32) and x^(4*128-32) mod P (folding by 512 bits), then by 128 bits, then 64.
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
  const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
  const __m128i poly_mu = _mm_set_epi64x(0x01f7011641, 0x01db710641);  // mu, P'
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);

  __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
  __m128i x3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32));
  __m128i x4 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 48));
  x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128(static_cast<int>(crc)));
  p += 64;
  length -= 64;

  while (length >= 64) {
    x1 = fold(x1, k1k2, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    x2 = fold(x2, k1k2, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
    x3 = fold(x3, k1k2, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32)));
    x4 = fold(x4, k1k2, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 48)));
    p += 64;
    length -= 64;
  }
  x1 = fold(x1, k3k4, x2);
  x1 = fold(x1, k3k4, x3);
  x1 = fold(x1, k3k4, x4);
  while (length >= 16) {
    x1 = fold(x1, k3k4, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    p += 16;
    length -= 16;
  }
  // 128 bits to 64.
  __m128i x2r = _mm_srli_si128(x1, 8);
  x1 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
  x1 = _mm_xor_si128(x1, x2r);
  // 64 bits to 32.
  x2r = _mm_srli_si128(x1, 4);
  x1 = _mm_and_si128(x1, mask32);
  x1 = _mm_clmulepi64_si128(x1, k5, 0x00);
  x1 = _mm_xor_si128(x1, x2r);
  // Barrett reduction.
  x2r = x1;
  x1 = _mm_and_si128(x1, mask32);
  x1 = _mm_clmulepi64_si128(x1, poly_mu, 0x10);
  x1 = _mm_and_si128(x1, mask32);
  x1 = _mm_clmulepi64_si128(x1, poly_mu, 0x00);
  x1 = _mm_xor_si128(x1, x2r);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}

bool CpuHasPclmul() {
  static const bool has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return has;
}

}  // namespace
#endif

uint32_t Crc32(uint32_t crc, const uint8_t* data, size_t length) {
#ifdef SHOAL_HAVE_PCLMUL
  if (length >= 64 && CpuHasPclmul()) {
    size_t folded = length & ~size_t{15};
    // zlib's crc32() inverts the register before and after.
    crc = ~FoldPclmul(~crc, data, folded);
    data += folded;
    length -= folded;
  }
#endif
  return length > 0 ? Crc32Portable(crc, data, length) : crc;
}

}  // namespace shoal
