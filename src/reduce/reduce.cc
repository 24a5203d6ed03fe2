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
// Loops are written in kBlockBytes blocks (kernels.h says why). divideBy, an average's last
// step, is in divide.cc; the f16/bf16 AVX2 codecs both use are in kernels.h.
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
#include "reduce/kernels.h"


namespace coll::reduce {
namespace {

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

// A few elements (the small-op board's operands): the scalar loop at once. It is the loop
// runShape() runs for a tail shorter than a block, which is all such a call has, so the bits
// are the same; the CPU-specific entry's call and set-up cost more than the arithmetic here
// (callgrind: 160 instructions for an all-reduce of 2 floats, 30 this way).
constexpr size_t kSmallBytes = 64;

template <class Op, class T>
COLL_INLINE void smallLoop(const Call& c) {
  auto* out = static_cast<T*>(c.out);  // may be a or b (then element i is read before written)
  const auto* a = static_cast<const T*>(c.a);
  const auto* b = static_cast<const T*>(c.b);
  for (size_t i = 0; i < c.count; ++i) out[i] = Op::apply(a[i], b[i]);
}

template <class T>
bool smallTyped(const Call& c) {
  if (c.count > kSmallBytes / sizeof(T)) return false;
  switch (c.op) {
    case ReduceOp::sum:
    case ReduceOp::avg: smallLoop<Sum, T>(c); return true;
    case ReduceOp::prod: smallLoop<Prod, T>(c); return true;
    case ReduceOp::min: smallLoop<Min, T>(c); return true;
    case ReduceOp::max: smallLoop<Max, T>(c); return true;
  }
  return false;
}

// False where the call is not small, or its type is f16/bf16 (their conversions live in the
// CPU-specific entries).
bool runSmall(const Call& c, DataType type) {
  switch (type) {
    case DataType::f32: return smallTyped<float>(c);
    case DataType::f64: return smallTyped<double>(c);
    case DataType::i8: return smallTyped<int8_t>(c);
    case DataType::u8: return smallTyped<uint8_t>(c);
    case DataType::i32: return smallTyped<int32_t>(c);
    case DataType::u32: return smallTyped<uint32_t>(c);
    case DataType::i64: return smallTyped<int64_t>(c);
    case DataType::u64: return smallTyped<uint64_t>(c);
    case DataType::f16:
    case DataType::bf16: return false;
  }
  return false;
}

void run(const Call& c, DataType type) {
  assert(isValid(c.op) && "reduce: invalid ReduceOp");
  if (runSmall(c, type)) return;
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

}  // namespace coll::reduce
