// What the host reduction kernels (reduce.cc) and the averaging division (divide.cc) share:
// forced inlining, so that everything below a multiversioned entry is built for its target
// (target_clones.h); the 256-byte block their loops are written in; and, on x86, the AVX2
// codecs that move f16 and bf16 elements between memory and f32 lanes. Internal to src/reduce.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reduce/half.h"
#include "reduce/target_clones.h"

#ifdef COLL_X86
#include <cpuid.h>
#include <immintrin.h>
#endif

#if defined(__GNUC__)
#define COLL_INLINE inline __attribute__((always_inline))
#else
#define COLL_INLINE inline
#endif

namespace coll::reduce {

// Loops run in blocks of this many bytes with a constant trip count plus a scalar tail: that is
// what lets GCC vectorise them at -O2 too, whose "very cheap" cost model refuses loops that
// would need a scalar epilogue.
constexpr size_t kBlockBytes = 256;

#ifdef COLL_HAVE_X86_PATHS
// Every CPU with AVX2 also has F16C (Haswell, Zen), so one check covers both codecs.
#define COLL_AVX2 __attribute__((target("avx2,f16c")))

// F16C is read from CPUID itself: clang's __builtin_cpu_supports does not know it. The
// "avx2" check includes the OS's consent to use the YMM registers, which F16C needs too.
inline bool cpuHasAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return __builtin_cpu_supports("avx2") && f16c;
  }();
  return has;
}

// Hand-written because GCC's own vectorisation of floatToBf16 spends half its instructions
// reordering lanes. A codec moves 16 elements between memory and two vectors of 8 floats;
// which element goes to which lane is its own business, since the ops are elementwise.

// VCVTPH2PS/VCVTPS2PH with an explicit round-to-nearest-even immediate, so MXCSR's rounding
// mode cannot change the result. Matches halfToFloat/floatToHalf (unit-tested), NaNs too.
struct F16cCodec {
  static COLL_AVX2 COLL_INLINE void load(const uint16_t* p, __m256& lo, __m256& hi) {
    lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
  static COLL_AVX2 COLL_INLINE void store(uint16_t* p, __m256 lo, __m256 hi) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8),
                     _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
  }
  static COLL_AVX2 COLL_INLINE float toFloat(uint16_t h) { return _cvtsh_ss(h); }
  static COLL_AVX2 COLL_INLINE uint16_t fromFloat(float f) {
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
  }
};

// floatToBf16's rounding on 8 lanes, leaving each result in the high 16 bits of its lane.
COLL_AVX2 COLL_INLINE __m256i roundToBf16High(__m256 f) {
  __m256i bits = _mm256_castps_si256(f);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
}

// floatToBf16's NaN case: the rounding above could carry a NaN into infinity (or the sign).
COLL_AVX2 COLL_INLINE __m256i quietNans(__m256 f, __m256i rounded) {
  __m256i quiet = _mm256_or_si256(_mm256_castps_si256(f), _mm256_set1_epi32(0x00400000));
  return _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q)));
}

// A bf16 is the top half of an f32, so the even elements widen by a shift and the odd ones
// by masking off their neighbour; narrowing puts each back in its half. NaNs are rare in
// real data, so one test per 16 elements skips their fix-up.
struct Bf16Codec {
  static COLL_AVX2 COLL_INLINE void load(const uint16_t* p, __m256& even, __m256& odd) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    odd = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(int32_t(0xffff0000u))));
  }
  static COLL_AVX2 COLL_INLINE void store(uint16_t* p, __m256 even, __m256 odd) {
    __m256i roundedEven = roundToBf16High(even);
    __m256i roundedOdd = roundToBf16High(odd);
    if (_mm256_movemask_ps(_mm256_cmp_ps(even, odd, _CMP_UNORD_Q)) != 0) [[unlikely]] {
      roundedEven = quietNans(even, roundedEven);
      roundedOdd = quietNans(odd, roundedOdd);
    }
    __m256i packed = _mm256_blend_epi16(_mm256_srli_epi32(roundedEven, 16), roundedOdd, 0xaa);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), packed);
  }
  static COLL_INLINE float toFloat(uint16_t h) { return bf16ToFloat(h); }
  static COLL_INLINE uint16_t fromFloat(float f) { return floatToBf16(f); }
};
#endif

}  // namespace coll::reduce
