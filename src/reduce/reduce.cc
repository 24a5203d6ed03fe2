// Host reduction kernels.
//
// Shape of the code: the public functions pick one entry per DataType (a switch, once per
// call); that entry switches once on the op and on how the pointers alias, then runs a
// plain loop. Everything below the entry is forced inline, so each entry is compiled as a
// whole for its target: the x86 entries are built twice, AVX2 and baseline, and the loader
// picks one (GCC function multiversioning), so the library runs on any x86-64 and is fast
// on the CPUs people have. f16 and bf16 instead have hand-written AVX2 loops behind a
// runtime CPU check, with portable code as the fallback and as the definition of the result.
//
// Loops are written in 256-byte blocks with a constant trip count plus a scalar tail. That
// is what lets GCC vectorise them at -O2 too, whose "very cheap" cost model refuses loops
// that would need a scalar epilogue.
//
// Special values, one rule for every algorithm, transport and chunking (docs/ARCHITECTURE.md,
// "Special values"): for the float types, a result computed from a NaN is the canonical quiet
// NaN (f32 0x7fc00000, f64 0x7ff8000000000000, f16 0x7e00, bf16 0x7fc0), for sum, prod, min and
// max alike (NaN propagates, as torch.minimum and NumPy's minimum do), so every rank gets the
// same bits whichever operand's NaN an algorithm met first; and min/max order -0 below +0
// (IEEE 754-2019 minimum/maximum), so min(+0, -0) is -0 in either order. Integers are
// unaffected. Each rule is a compare and a blend per vector: the loops stay vectorised.
#include "reduce/reduce.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

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
namespace {

constexpr size_t kBlockBytes = 256;

// The type the arithmetic happens in: T itself for floats; for integers an unsigned type of
// at least int's width, so that neither T's signedness nor the promotion of narrow types
// to (signed) int can make an overflow undefined.
template <class T, bool = std::is_integral_v<T>>
struct ArithmeticOf {
  using type = T;
};
template <class T>
struct ArithmeticOf<T, true> {
  using type = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
};
template <class T>
using Wide = typename ArithmeticOf<T>::type;

// The canonical quiet NaN of the arithmetic type (f16/bf16 combine in f32, whose canonical
// NaN narrows to theirs).
template <class T>
COLL_INLINE T canonicalNan() {
  return std::numeric_limits<T>::quiet_NaN();
}

// r, unless it is a NaN: then the canonical one.
template <class T>
COLL_INLINE T canonical(T r) {
  if constexpr (std::is_floating_point_v<T>) return r != r ? canonicalNan<T>() : r;
  return r;
}

// Integer sum and prod wrap (two's complement, as in NCCL): unsigned arithmetic wraps by
// definition, and the conversion back to T is modular in C++20.
struct Sum {
  template <class T>
  static COLL_INLINE T apply(T a, T b) {
    return canonical(static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b)));
  }
};

struct Prod {
  template <class T>
  static COLL_INLINE T apply(T a, T b) {
    return canonical(static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b)));
  }
};

// The unsigned integer of a float's width, to reach its bits.
template <class T>
using BitsOf = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

// For floats: any NaN gives the canonical NaN; equal operands (a tie, which for zeros may
// differ in sign) give a | b for min (the sign bit if either has it) and a & b for max.
// Written as selects without branches, so the loops stay vectorised.
struct Min {
  template <class T>
  static COLL_INLINE T apply(T a, T b) {
    T m = b < a ? b : a;
    if constexpr (std::is_floating_point_v<T>) {
      T tie = std::bit_cast<T>(std::bit_cast<BitsOf<T>>(a) | std::bit_cast<BitsOf<T>>(b));
      m = a == b ? tie : m;
      m = (a != a) | (b != b) ? canonicalNan<T>() : m;
    }
    return m;
  }
};

struct Max {
  template <class T>
  static COLL_INLINE T apply(T a, T b) {
    T m = a < b ? b : a;
    if constexpr (std::is_floating_point_v<T>) {
      T tie = std::bit_cast<T>(std::bit_cast<BitsOf<T>>(a) & std::bit_cast<BitsOf<T>>(b));
      m = a == b ? tie : m;
      m = (a != a) | (b != b) ? canonicalNan<T>() : m;
    }
    return m;
  }
};

// The ordinary comparison alone, and the blocks it is exact for: where no pair ties and none
// holds a NaN, Min and Max reduce to it. runShape checks each 256-byte block first (a
// vectorised pass over data already in L1) and runs the plain loop when it can: the rule then
// costs the check, not a select chain per element.
struct PlainMin {
  template <class T>
  static COLL_INLINE T apply(T a, T b) {
    return b < a ? b : a;
  }
};
struct PlainMax {
  template <class T>
  static COLL_INLINE T apply(T a, T b) {
    return a < b ? b : a;
  }
};
template <class Op>
struct PlainOf {
  using type = void;  // no fast path
};
template <>
struct PlainOf<Min> {
  using type = PlainMin;
};
template <>
struct PlainOf<Max> {
  using type = PlainMax;
};

template <class T, class Count>
COLL_INLINE bool plainBlock(const T* a, const T* b, Count n) {
  unsigned special = 0;  // equal or unordered: neither is below the other
  for (size_t i = 0; i < n; ++i) special |= static_cast<unsigned>(!(a[i] < b[i]) & !(b[i] < a[i]));
  return special == 0;
}

// For reduce(out, a, b) with out == b: the loop accumulates into out but must still compute
// op(a, b) in that order, which matters for min/max with NaN.
template <class Op>
struct Flipped {
  template <class T>
  static COLL_INLINE T apply(T a, T b) {
    return Op::apply(b, a);
  }
};

// How the pointers of one call relate. Each gets its own loop so that no loop ever has to
// assume aliasing (which would cost runtime overlap checks or block vectorisation) and no
// loop lies to the compiler with __restrict.
enum class Shape {
  kDistinct,  // out = op(a, b), out distinct from both (a may equal b)
  kIntoA,     // out == a: out = op(out, b)
  kIntoB,     // out == b: out = op(a, out)
  kSelf,      // out == a == b: out = op(out, out)
};

struct Call {
  void* out;
  const void* a;
  const void* b;
  size_t count;
  ReduceOp op;
  Shape shape;
};

// Count is size_t or std::integral_constant: the same loop serves the tail and, with a
// constant trip count, the full blocks.
template <class Op, class T, class Count>
COLL_INLINE void combine3(T* __restrict out, const T* __restrict a, const T* __restrict b,
                          Count n) {
  for (size_t i = 0; i < n; ++i) out[i] = Op::apply(a[i], b[i]);
}

template <class Op, class T, class Count>
COLL_INLINE void combineInto(T* __restrict dst, const T* __restrict src, Count n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Op::apply(dst[i], src[i]);
}

template <class Op, class T, class Count>
COLL_INLINE void combineSelf(T* buf, Count n) {
  for (size_t i = 0; i < n; ++i) buf[i] = Op::apply(buf[i], buf[i]);
}

template <class Op, class T>
COLL_INLINE void runShape(const Call& c) {
  constexpr size_t kStep = kBlockBytes / sizeof(T);
  constexpr std::integral_constant<size_t, kStep> kFull;
  using Plain = typename PlainOf<Op>::type;
  constexpr bool kFast = std::is_floating_point_v<T> && !std::is_void_v<Plain>;
  auto* out = static_cast<T*>(c.out);
  const auto* a = static_cast<const T*>(c.a);
  const auto* b = static_cast<const T*>(c.b);
  size_t n = c.count;
  size_t tail = n % kStep;
  size_t end = n - tail;
  switch (c.shape) {
    case Shape::kDistinct:
      for (size_t i = 0; i < end; i += kStep) {
        if constexpr (kFast) {
          if (plainBlock(a + i, b + i, kFull)) {
            combine3<Plain>(out + i, a + i, b + i, kFull);
            continue;
          }
        }
        combine3<Op>(out + i, a + i, b + i, kFull);
      }
      combine3<Op>(out + end, a + end, b + end, tail);
      break;
    case Shape::kIntoA:
      for (size_t i = 0; i < end; i += kStep) {
        if constexpr (kFast) {
          if (plainBlock(out + i, b + i, kFull)) {
            combineInto<Plain>(out + i, b + i, kFull);
            continue;
          }
        }
        combineInto<Op>(out + i, b + i, kFull);
      }
      combineInto<Op>(out + end, b + end, tail);
      break;
    case Shape::kIntoB:
      for (size_t i = 0; i < end; i += kStep) {
        if constexpr (kFast) {
          if (plainBlock(a + i, out + i, kFull)) {
            combineInto<Flipped<Plain>>(out + i, a + i, kFull);
            continue;
          }
        }
        combineInto<Flipped<Op>>(out + i, a + i, kFull);
      }
      combineInto<Flipped<Op>>(out + end, a + end, tail);
      break;
    case Shape::kSelf:
      for (size_t i = 0; i < end; i += kStep) combineSelf<Op>(out + i, kFull);
      combineSelf<Op>(out + end, tail);
      break;
  }
}

template <class T>
COLL_INLINE void runTyped(const Call& c) {
  switch (c.op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return runShape<Sum, T>(c);
    case ReduceOp::prod: return runShape<Prod, T>(c);
    case ReduceOp::min: return runShape<Min, T>(c);
    case ReduceOp::max: return runShape<Max, T>(c);
  }
}

// --- f16 and bf16: each element is widened to f32, combined there and rounded back. ---
//
// Fused per element rather than staged through f32 scratch blocks: the staging stores and
// reloads cost as much as the arithmetic (measured: bf16 sum ran at 5 GB/s staged in L1,
// about a tenth of f32). The portable paths below are the definition; the AVX2 paths must
// give the same bits, because ranks on different hosts have to agree on every element.

template <class Op>
struct ViaBf16 {
  static COLL_INLINE uint16_t apply(uint16_t a, uint16_t b) {
    return floatToBf16(Op::apply(bf16ToFloat(a), bf16ToFloat(b)));
  }
};

// Baseline f16: the portable conversions in half.cc, a call per element. Only CPUs without
// F16C (x86 before Haswell, or other architectures) come here.
template <class Op>
struct ViaPortableHalf {
  static COLL_INLINE uint16_t apply(uint16_t a, uint16_t b) {
    return floatToHalf(Op::apply(halfToFloat(a), halfToFloat(b)));
  }
};

template <template <class> class Via>
COLL_INLINE void runVia(const Call& c) {
  switch (c.op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return runShape<Via<Sum>, uint16_t>(c);
    case ReduceOp::prod: return runShape<Via<Prod>, uint16_t>(c);
    case ReduceOp::min: return runShape<Via<Min>, uint16_t>(c);
    case ReduceOp::max: return runShape<Via<Max>, uint16_t>(c);
  }
}

#ifdef COLL_HAVE_X86_PATHS
// Every CPU with AVX2 also has F16C (Haswell, Zen), so one check covers both codecs.
#define COLL_AVX2 __attribute__((target("avx2,f16c")))

// F16C is read from CPUID itself: clang's __builtin_cpu_supports does not know it. The
// "avx2" check includes the OS's consent to use the YMM registers, which F16C needs too.
bool cpuHasAvx2() {
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

// Op on 8 lanes, with exactly the scalar semantics (Sum, Prod, Min, Max above). MINPS(x, y) is
// (x < y ? x : y) and MAXPS(x, y) is (x > y ? x : y), so passing (b, a) gives the ordinary case.
template <class Op>
COLL_AVX2 COLL_INLINE __m256 applyLanes(__m256 a, __m256 b) {
  if constexpr (std::is_same_v<Op, Sum>) return _mm256_add_ps(a, b);
  if constexpr (std::is_same_v<Op, Prod>) return _mm256_mul_ps(a, b);
  if constexpr (std::is_same_v<Op, Min>) return _mm256_min_ps(b, a);
  if constexpr (std::is_same_v<Op, Max>) return _mm256_max_ps(b, a);
}

// The special values' rule on 8 lanes, for the rare groups that need it: a tie takes a | b
// (min) or a & b (max), and any NaN lane becomes the canonical NaN.
template <class Op>
COLL_AVX2 COLL_INLINE __m256 fixSpecialLanes(__m256 a, __m256 b, __m256 r) {
  const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));
  if constexpr (std::is_same_v<Op, Min> || std::is_same_v<Op, Max>) {
    __m256 tie = std::is_same_v<Op, Min> ? _mm256_or_ps(a, b) : _mm256_and_ps(a, b);
    r = _mm256_blendv_ps(r, tie, _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, qnan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  } else {
    return _mm256_blendv_ps(r, qnan, _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
  }
}

// Whether a group of 16 needs fixSpecialLanes, with one compare for both halves: for sum and
// prod a NaN result in either; for min and max a NaN operand or a tie (EQ_UQ: equal or
// unordered) in either.
template <class Op>
COLL_AVX2 COLL_INLINE bool needsFix(__m256 aLo, __m256 bLo, __m256 aHi, __m256 bHi, __m256 rLo, __m256 rHi) {
  if constexpr (std::is_same_v<Op, Min> || std::is_same_v<Op, Max>) {
    __m256 any = _mm256_or_ps(_mm256_cmp_ps(aLo, bLo, _CMP_EQ_UQ), _mm256_cmp_ps(aHi, bHi, _CMP_EQ_UQ));
    return _mm256_movemask_ps(any) != 0;
  } else {
    return _mm256_movemask_ps(_mm256_cmp_ps(rLo, rHi, _CMP_UNORD_Q)) != 0;
  }
}

// Each group of 16 is loaded before it is stored, so out may equal a or b: Shape is moot.
template <class Codec, class Op>
COLL_AVX2 COLL_INLINE void combineLanes(const Call& c) {
  auto* out = static_cast<uint16_t*>(c.out);
  const auto* a = static_cast<const uint16_t*>(c.a);
  const auto* b = static_cast<const uint16_t*>(c.b);
  size_t vectorEnd = c.count - c.count % 16;
  for (size_t i = 0; i < vectorEnd; i += 16) {
    __m256 aLo, aHi, bLo, bHi;
    Codec::load(a + i, aLo, aHi);
    Codec::load(b + i, bLo, bHi);
    __m256 rLo = applyLanes<Op>(aLo, bLo), rHi = applyLanes<Op>(aHi, bHi);
    if (needsFix<Op>(aLo, bLo, aHi, bHi, rLo, rHi)) [[unlikely]] {
      rLo = fixSpecialLanes<Op>(aLo, bLo, rLo);
      rHi = fixSpecialLanes<Op>(aHi, bHi, rHi);
    }
    Codec::store(out + i, rLo, rHi);
  }
  for (size_t i = vectorEnd; i < c.count; ++i) {
    out[i] = Codec::fromFloat(Op::apply(Codec::toFloat(a[i]), Codec::toFloat(b[i])));
  }
}

template <class Codec>
COLL_AVX2 void runLanes(const Call& c) {
  switch (c.op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return combineLanes<Codec, Sum>(c);
    case ReduceOp::prod: return combineLanes<Codec, Prod>(c);
    case ReduceOp::min: return combineLanes<Codec, Min>(c);
    case ReduceOp::max: return combineLanes<Codec, Max>(c);
  }
}

template <class Codec>
COLL_AVX2 void divideLanes(void* data, size_t count, int divisor) {
  auto* buf = static_cast<uint16_t*>(data);
  auto d = static_cast<float>(divisor);
  __m256 dv = _mm256_set1_ps(d);
  size_t vectorEnd = count - count % 16;
  for (size_t i = 0; i < vectorEnd; i += 16) {
    __m256 lo, hi;
    Codec::load(buf + i, lo, hi);
    Codec::store(buf + i, _mm256_div_ps(lo, dv), _mm256_div_ps(hi, dv));
  }
  for (size_t i = vectorEnd; i < count; ++i) buf[i] = Codec::fromFloat(Codec::toFloat(buf[i]) / d);
}
#endif

// --- Per-type entries: the only functions that are multiversioned. ---

COLL_CLONES void runF32(const Call& c) { runTyped<float>(c); }
COLL_CLONES void runF64(const Call& c) { runTyped<double>(c); }
COLL_CLONES void runI8(const Call& c) { runTyped<int8_t>(c); }
COLL_CLONES void runU8(const Call& c) { runTyped<uint8_t>(c); }
COLL_CLONES void runI32(const Call& c) { runTyped<int32_t>(c); }
COLL_CLONES void runU32(const Call& c) { runTyped<uint32_t>(c); }
COLL_CLONES void runI64(const Call& c) { runTyped<int64_t>(c); }
COLL_CLONES void runU64(const Call& c) { runTyped<uint64_t>(c); }

void runBf16(const Call& c) {
#ifdef COLL_HAVE_X86_PATHS
  if (cpuHasAvx2()) return runLanes<Bf16Codec>(c);
#endif
  runVia<ViaBf16>(c);
}

void runF16(const Call& c) {
#ifdef COLL_HAVE_X86_PATHS
  if (cpuHasAvx2()) return runLanes<F16cCodec>(c);
#endif
  runVia<ViaPortableHalf>(c);
}

// --- divideBy ---

// buf[i] = f(buf[i]), in constant-length blocks for the vectoriser like runShape.
template <class T, class F, class Count>
COLL_INLINE void mapRange(T* buf, Count n, F f) {
  for (size_t i = 0; i < n; ++i) buf[i] = f(buf[i]);
}

template <class T, class F>
COLL_INLINE void mapAll(void* data, size_t count, F f) {
  constexpr size_t kStep = kBlockBytes / sizeof(T);
  constexpr std::integral_constant<size_t, kStep> kFull;
  auto* buf = static_cast<T*>(data);
  size_t tail = count % kStep;
  size_t end = count - tail;
  for (size_t i = 0; i < end; i += kStep) mapRange(buf + i, kFull, f);
  mapRange(buf + end, tail, f);
}

// A true division, not a multiply by the reciprocal: that would differ in the last bit.
template <class T>
struct DivideFloating {
  T divisor;
  COLL_INLINE T operator()(T x) const { return x / divisor; }
};

struct DivideBf16 {
  float divisor;
  COLL_INLINE uint16_t operator()(uint16_t x) const {
    return floatToBf16(bf16ToFloat(x) / divisor);
  }
};

struct DividePortableHalf {
  float divisor;
  uint16_t operator()(uint16_t x) const { return floatToHalf(halfToFloat(x) / divisor); }
};

// x86 has no vector integer division, so these stay scalar. With a positive divisor the
// quotient always fits T; computing in T's promotion with int keeps divisors larger than
// T's range (say 300 for u8) exact, and C++ division truncates toward zero.
template <class T>
void divideInteger(void* data, size_t count, int divisor) {
  using C = std::common_type_t<T, int>;
  auto* buf = static_cast<T*>(data);
  auto d = static_cast<C>(divisor);
  for (size_t i = 0; i < count; ++i) buf[i] = static_cast<T>(static_cast<C>(buf[i]) / d);
}

COLL_CLONES void divideF32(void* buf, size_t n, int d) {
  mapAll<float>(buf, n, DivideFloating<float>{static_cast<float>(d)});
}
COLL_CLONES void divideF64(void* buf, size_t n, int d) {
  mapAll<double>(buf, n, DivideFloating<double>{static_cast<double>(d)});
}

void divideBf16(void* buf, size_t n, int d) {
#ifdef COLL_HAVE_X86_PATHS
  if (cpuHasAvx2()) return divideLanes<Bf16Codec>(buf, n, d);
#endif
  mapAll<uint16_t>(buf, n, DivideBf16{static_cast<float>(d)});
}

void divideF16(void* buf, size_t n, int d) {
#ifdef COLL_HAVE_X86_PATHS
  if (cpuHasAvx2()) return divideLanes<F16cCodec>(buf, n, d);
#endif
  mapAll<uint16_t>(buf, n, DividePortableHalf{static_cast<float>(d)});
}

void run(const Call& c, DataType type) {
  assert(isValid(c.op) && "reduce: invalid ReduceOp");
  switch (type) {
    case DataType::f32: return runF32(c);
    case DataType::f64: return runF64(c);
    case DataType::f16: return runF16(c);
    case DataType::bf16: return runBf16(c);
    case DataType::i8: return runI8(c);
    case DataType::u8: return runU8(c);
    case DataType::i32: return runI32(c);
    case DataType::u32: return runU32(c);
    case DataType::i64: return runI64(c);
    case DataType::u64: return runU64(c);
  }
  assert(false && "reduce: invalid DataType");
}

}  // namespace

// Invalid types or ops are the caller's bug (the API boundary validates them); debug builds
// assert, release builds leave the output untouched.
void reduceInto(void* dst, const void* src, size_t count, DataType type, ReduceOp op) {
  if (count == 0) return;
  Shape shape = dst == src ? Shape::kSelf : Shape::kIntoA;
  run(Call{dst, dst, src, count, op, shape}, type);
}

void reduce(void* out, const void* a, const void* b, size_t count, DataType type, ReduceOp op) {
  if (count == 0) return;
  Shape shape = Shape::kDistinct;
  if (out == a && out == b) {
    shape = Shape::kSelf;
  } else if (out == a) {
    shape = Shape::kIntoA;
  } else if (out == b) {
    shape = Shape::kIntoB;
  }
  run(Call{out, a, b, count, op, shape}, type);
}

// divisor must be positive: it is the number of contributions averaged. Release builds
// leave the buffer untouched otherwise, rather than trap on an integer division by zero.
void divideBy(void* buf, size_t count, DataType type, int divisor) {
  assert(divisor > 0 && "divideBy: divisor must be positive");
  if (count == 0 || divisor <= 0 || divisor == 1) return;
  switch (type) {
    case DataType::f32: return divideF32(buf, count, divisor);
    case DataType::f64: return divideF64(buf, count, divisor);
    case DataType::f16: return divideF16(buf, count, divisor);
    case DataType::bf16: return divideBf16(buf, count, divisor);
    case DataType::i8: return divideInteger<int8_t>(buf, count, divisor);
    case DataType::u8: return divideInteger<uint8_t>(buf, count, divisor);
    case DataType::i32: return divideInteger<int32_t>(buf, count, divisor);
    case DataType::u32: return divideInteger<uint32_t>(buf, count, divisor);
    case DataType::i64: return divideInteger<int64_t>(buf, count, divisor);
    case DataType::u64: return divideInteger<uint64_t>(buf, count, divisor);
  }
  assert(false && "divideBy: invalid DataType");
}

}  // namespace coll::reduce
