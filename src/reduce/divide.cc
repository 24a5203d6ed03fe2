// divideBy: the last step of an average, each element divided by the number of ranks that
// contributed. Built like the reduction kernels (kernels.h): f32 and f64 multiversioned, f16
// and bf16 through the AVX2 codecs where the CPU has them, integers scalar.
#include <cassert>
#include <cstdint>
#include <type_traits>

#include "reduce/half.h"
#include "reduce/kernels.h"
#include "reduce/reduce.h"

namespace coll::reduce {
namespace {

#ifdef COLL_HAVE_X86_PATHS
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

// buf[i] = f(buf[i]), in constant-length blocks for the vectoriser, as reduce.cc's runShape.
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

}  // namespace

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
