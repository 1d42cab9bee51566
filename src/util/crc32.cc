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

// Folding constants for the reflected polynomial: (x^(d+32) mod P, x^(d-32) mod P), bit-reversed
// and shifted left by one, for a folding distance of d bits; x^64 mod P for the last step; and
// Barrett's mu and P' (Gopal et al., "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ", Intel, 2009).
constexpr long long kFold2048Lo = 0x11542778a, kFold2048Hi = 0x1322d1430;
constexpr long long kFold512Lo = 0x154442bd4, kFold512Hi = 0x1c6e41596;
constexpr long long kFold128Lo = 0x1751997d0, kFold128Hi = 0x0ccaa009e;
constexpr long long kFold64 = 0x163cd6124;
constexpr long long kPolyPrime = 0x1db710641, kMu = 0x1f7011641;

// x * (k.lo, k.hi) folded onto `next`.
__attribute__((target("pclmul,sse4.1"), always_inline)) inline __m128i fold(__m128i x, __m128i k, __m128i next) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

__attribute__((target("pclmul,sse4.1"), always_inline)) inline __m128i load16(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Finishes a fold whose four 128-bit accumulators x1..x4 stand for the 64 bytes before `p`:
// folds them into one, then the remaining 16-byte blocks (`length` is a multiple of 16), then
// reduces 128 bits to the 32-bit remainder.
__attribute__((target("pclmul,sse4.1"), always_inline)) inline uint32_t Finish(__m128i x1, __m128i x2, __m128i x3,
                                                                               __m128i x4, const uint8_t* p,
                                                                               size_t length) {
  const __m128i k3k4 = _mm_set_epi64x(kFold128Hi, kFold128Lo);
  const __m128i k5 = _mm_set_epi64x(0, kFold64);
  const __m128i poly_mu = _mm_set_epi64x(kMu, kPolyPrime);
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  x1 = fold(x1, k3k4, x2);
  x1 = fold(x1, k3k4, x3);
  x1 = fold(x1, k3k4, x4);
  while (length >= 16) {
    x1 = fold(x1, k3k4, load16(p));
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

// Folds 64 bytes at a time with four 128-bit accumulators. `crc` is the raw (non-inverted)
// register; `length` is at least 64 and a multiple of 16.
__attribute__((target("pclmul,sse4.1"))) uint32_t FoldPclmul(uint32_t crc, const uint8_t* p, size_t length) {
  const __m128i k1k2 = _mm_set_epi64x(kFold512Hi, kFold512Lo);
  __m128i x1 = _mm_xor_si128(load16(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x2 = load16(p + 16);
  __m128i x3 = load16(p + 32);
  __m128i x4 = load16(p + 48);
  p += 64;
  length -= 64;
  while (length >= 64) {
    x1 = fold(x1, k1k2, load16(p));
    x2 = fold(x2, k1k2, load16(p + 16));
    x3 = fold(x3, k1k2, load16(p + 32));
    x4 = fold(x4, k1k2, load16(p + 48));
    p += 64;
    length -= 64;
  }
  return Finish(x1, x2, x3, x4, p, length);
}

#define SHOAL_VPCLMUL_TARGET target("avx512f,vpclmulqdq,pclmul,sse4.1")

__attribute__((SHOAL_VPCLMUL_TARGET, always_inline)) inline __m512i fold512(__m512i x, __m512i k, __m512i next) {
  __m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00);
  __m512i hi = _mm512_clmulepi64_epi128(x, k, 0x11);
  return _mm512_ternarylogic_epi64(lo, hi, next, 0x96);  // lo ^ hi ^ next
}

__attribute__((SHOAL_VPCLMUL_TARGET, always_inline)) inline __m512i load64(const uint8_t* p) {
  return _mm512_loadu_si512(p);
}

// The same fold on 512-bit registers: four accumulators of four 128-bit lanes each fold 256
// bytes at a time, then collapse into one register of four lanes, which Finish completes.
// `length` is at least 256 and a multiple of 16.
__attribute__((SHOAL_VPCLMUL_TARGET)) uint32_t FoldVpclmul(uint32_t crc, const uint8_t* p, size_t length) {
  // (Built with set rather than broadcast/extract intrinsics, whose GCC 12 headers warn.)
  const __m512i k2048 = _mm512_set_epi64(kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo, kFold2048Hi,
                                         kFold2048Lo, kFold2048Hi, kFold2048Lo);
  const __m512i k512 =
      _mm512_set_epi64(kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo);
  __m512i x0 = _mm512_xor_si512(load64(p), _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, crc));
  __m512i x1 = load64(p + 64);
  __m512i x2 = load64(p + 128);
  __m512i x3 = load64(p + 192);
  p += 256;
  length -= 256;
  while (length >= 256) {
    x0 = fold512(x0, k2048, load64(p));
    x1 = fold512(x1, k2048, load64(p + 64));
    x2 = fold512(x2, k2048, load64(p + 128));
    x3 = fold512(x3, k2048, load64(p + 192));
    p += 256;
    length -= 256;
  }
  x0 = fold512(x0, k512, x1);
  x0 = fold512(x0, k512, x2);
  x0 = fold512(x0, k512, x3);
  while (length >= 64) {
    x0 = fold512(x0, k512, load64(p));
    p += 64;
    length -= 64;
  }
  alignas(64) __m128i lanes[4];
  _mm512_store_si512(lanes, x0);
  return Finish(lanes[0], lanes[1], lanes[2], lanes[3], p, length);
}

}  // namespace
#endif

bool Crc32KernelAvailable(Crc32Kernel kernel) {
  switch (kernel) {
    case Crc32Kernel::kPortable:
      return true;
#ifdef SHOAL_HAVE_PCLMUL
    case Crc32Kernel::kPclmul: {
      static const bool has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
      return has;
    }
    case Crc32Kernel::kVpclmul: {
      static const bool has = Crc32KernelAvailable(Crc32Kernel::kPclmul) && __builtin_cpu_supports("avx512f") &&
                              __builtin_cpu_supports("vpclmulqdq");
      return has;
    }
#endif
    default:
      return false;
  }
}

uint32_t Crc32With(Crc32Kernel kernel, uint32_t crc, const uint8_t* data, size_t length) {
#ifdef SHOAL_HAVE_PCLMUL
  // zlib's crc32() inverts the register before and after; the folds work on the raw one.
  if (kernel == Crc32Kernel::kVpclmul && length >= 256) {
    size_t folded = length & ~size_t{15};
    crc = ~FoldVpclmul(~crc, data, folded);
    data += folded;
    length -= folded;
  } else if (kernel != Crc32Kernel::kPortable && length >= 64) {
    size_t folded = length & ~size_t{15};
    crc = ~FoldPclmul(~crc, data, folded);
    data += folded;
    length -= folded;
  }
#else
  (void)kernel;
#endif
  return length > 0 ? Crc32Portable(crc, data, length) : crc;
}

uint32_t Crc32(uint32_t crc, const uint8_t* data, size_t length) {
  static const Crc32Kernel best = Crc32KernelAvailable(Crc32Kernel::kVpclmul) ? Crc32Kernel::kVpclmul
                                  : Crc32KernelAvailable(Crc32Kernel::kPclmul)  ? Crc32Kernel::kPclmul
                                                                                : Crc32Kernel::kPortable;
  return Crc32With(best, crc, data, length);
}

}  // namespace shoal
