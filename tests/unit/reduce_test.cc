// Reduction kernels against a scalar reference written independently here: wider
// arithmetic for the integers, double for f32 (exact for +,* of two floats rounded once more
// to float), the special-value rule written out (a NaN result is the canonical quiet NaN;
// min/max order -0 below +0), compared bit for bit. The f16/bf16 reference goes through half.h's
// scalar conversions, which the HalfConversion tests below pin to known bit patterns; the
// kernels use F16C where the CPU has it, so the two are independent there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "coll/types.h"
#include "reduce/half.h"
#include "reduce/reduce.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define COLL_TEST_F16C 1
#endif

namespace coll {
// Names the dtype in gtest's failure messages instead of dumping its bytes.
inline void PrintTo(DataType type, std::ostream* os) { *os << toString(type); }
}  // namespace coll

namespace coll::reduce {
namespace {

constexpr DataType kAllTypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16,
                                  DataType::i8,  DataType::u8,  DataType::i32, DataType::u32,
                                  DataType::i64, DataType::u64};
constexpr ReduceOp kAllOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max,
                                ReduceOp::avg};
// 1000003 is prime, so it is no multiple of any block or vector width; 4097 is one past a
// power of two.
constexpr size_t kCounts[] = {0, 1, 7, 31, 1000003, 4097};

template <class T>
T minRef(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();  // canonical
    if (a == b) return std::signbit(a) ? a : b;  // -0 is below +0
  }
  return b < a ? b : a;
}

template <class T>
T maxRef(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    if (a == b) return std::signbit(a) ? b : a;
  }
  return a < b ? b : a;
}

// A NaN result of sum or prod is the canonical quiet NaN, whatever NaN produced it.
template <class T>
T canonicalRef(T r) {
  return std::isnan(r) ? std::numeric_limits<T>::quiet_NaN() : r;
}

template <class T>
T integerRef(T a, T b, ReduceOp op) {
  // unsigned __int128 holds every exact sum and product; truncating it is the wrap.
  using U = unsigned __int128;
  U x = static_cast<U>(static_cast<std::make_unsigned_t<T>>(a));
  U y = static_cast<U>(static_cast<std::make_unsigned_t<T>>(b));
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return static_cast<T>(static_cast<std::make_unsigned_t<T>>(x + y));
    case ReduceOp::prod: return static_cast<T>(static_cast<std::make_unsigned_t<T>>(x * y));
    case ReduceOp::min: return minRef(a, b);
    case ReduceOp::max: return maxRef(a, b);
  }
  return 0;
}

// Both operands come from f32 (or f16/bf16 widened to f32); double holds their exact sum's
// and product's correct rounding to float (double rounding is harmless at 53 >= 2*24+2 bits).
float floatRef(float a, float b, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return canonicalRef(static_cast<float>(static_cast<double>(a) + b));
    case ReduceOp::prod: return canonicalRef(static_cast<float>(static_cast<double>(a) * b));
    case ReduceOp::min: return minRef(a, b);
    case ReduceOp::max: return maxRef(a, b);
  }
  return 0;
}

double doubleRef(double a, double b, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return canonicalRef(a + b);
    case ReduceOp::prod: return canonicalRef(a * b);
    case ReduceOp::min: return minRef(a, b);
    case ReduceOp::max: return maxRef(a, b);
  }
  return 0;
}

// One element of `type` at a[i], b[i] into out[i], on raw bytes.
void refElement(DataType type, ReduceOp op, const uint8_t* a, const uint8_t* b, uint8_t* out) {
  auto run = [&](auto zero, auto fn) {
    decltype(zero) x, y;
    std::memcpy(&x, a, sizeof x);
    std::memcpy(&y, b, sizeof y);
    decltype(zero) r = fn(x, y);
    std::memcpy(out, &r, sizeof r);
  };
  auto ints = [&](auto x, auto y) { return integerRef(x, y, op); };
  switch (type) {
    case DataType::f32: return run(0.0f, [&](float x, float y) { return floatRef(x, y, op); });
    case DataType::f64: return run(0.0, [&](double x, double y) { return doubleRef(x, y, op); });
    case DataType::f16:
      return run(uint16_t{}, [&](uint16_t x, uint16_t y) {
        return floatToHalf(floatRef(halfToFloat(x), halfToFloat(y), op));
      });
    case DataType::bf16:
      return run(uint16_t{}, [&](uint16_t x, uint16_t y) {
        return floatToBf16(floatRef(bf16ToFloat(x), bf16ToFloat(y), op));
      });
    case DataType::i8: return run(int8_t{}, ints);
    case DataType::u8: return run(uint8_t{}, ints);
    case DataType::i32: return run(int32_t{}, ints);
    case DataType::u32: return run(uint32_t{}, ints);
    case DataType::i64: return run(int64_t{}, ints);
    case DataType::u64: return run(uint64_t{}, ints);
  }
}

// Element values: integers are random bits (so sums and products wrap); floats are mostly
// moderate values, with ties, signed zeros, infinities and NaNs mixed in.
// SplitMix64: cheap enough that a million elements per input cost nothing, and the same
// on every platform.
uint64_t mix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<uint8_t> makeInput(DataType type, size_t count, uint64_t seed) {
  uint64_t state = seed;
  size_t size = sizeOf(type);
  std::vector<uint8_t> bytes(count * size);
  const double special[] = {0.0, -0.0, 1.0, std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(), std::nan("")};
  for (size_t i = 0; i < count; ++i) {
    uint64_t r = mix(state);
    double moderate = static_cast<double>(r >> 11) * 0x1p-53 * 200.0 - 100.0;
    // Every 13th element is a special, and every 7th the same in all seeds (a tie).
    double v = i % 13 == 5 ? special[r % 6] : i % 7 == 3 ? 2.5 : moderate;
    uint8_t* p = bytes.data() + i * size;
    if (type == DataType::f32) {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    } else if (type == DataType::f64) {
      std::memcpy(p, &v, 8);
    } else if (type == DataType::f16) {
      uint16_t h = floatToHalf(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    } else if (type == DataType::bf16) {
      uint16_t h = floatToBf16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    } else {
      std::memcpy(p, &r, size);
    }
  }
  return bytes;
}

struct Mismatch {
  size_t index = 0;
  bool any = false;
};

Mismatch compare(DataType type, const uint8_t* got, const uint8_t* want, size_t count) {
  size_t size = sizeOf(type);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* g = got + i * size;
    const uint8_t* w = want + i * size;
    if (std::memcmp(g, w, size) == 0) continue;  // NaNs too: every NaN result is canonical
    return {i, true};
  }
  return {};
}

std::string label(DataType type, ReduceOp op, size_t count, const char* variant) {
  return std::string(toString(type)) + " " + toString(op) + " n=" + std::to_string(count) +
         " " + variant;
}

// A buffer whose payload starts one element past an aligned base, so kernels cannot rely on
// alignment.
struct Buffer {
  Buffer(DataType type, const std::vector<uint8_t>& contents)
      : elementSize(sizeOf(type)), storage(contents.size() + elementSize) {
    if (!contents.empty()) std::memcpy(data(), contents.data(), contents.size());
  }
  uint8_t* data() { return storage.data() + elementSize; }
  size_t elementSize;
  std::vector<uint8_t> storage;
};

std::vector<uint8_t> expected(DataType type, ReduceOp op, const std::vector<uint8_t>& a,
                              const std::vector<uint8_t>& b, size_t count) {
  size_t size = sizeOf(type);
  std::vector<uint8_t> out(count * size);
  for (size_t i = 0; i < count; ++i) {
    refElement(type, op, a.data() + i * size, b.data() + i * size, out.data() + i * size);
  }
  return out;
}

void expectEqual(DataType type, const uint8_t* got, const std::vector<uint8_t>& want,
                 size_t count, const std::string& what) {
  Mismatch m = compare(type, got, want.data(), count);
  EXPECT_FALSE(m.any) << what << ": first mismatch at element " << m.index;
}

class ReduceKernel : public ::testing::TestWithParam<DataType> {};

TEST_P(ReduceKernel, MatchesReferenceForEveryOpCountAndAliasing) {
  DataType type = GetParam();
  for (size_t count : kCounts) {
    auto a = makeInput(type, count, 1);
    auto b = makeInput(type, count, 2);
    for (ReduceOp op : kAllOps) {
      auto ab = expected(type, op, a, b, count);
      auto aa = expected(type, op, a, a, count);

      Buffer dst(type, a), src(type, b);
      reduceInto(dst.data(), src.data(), count, type, op);
      expectEqual(type, dst.data(), ab, count, label(type, op, count, "reduceInto"));

      Buffer self(type, a);
      reduceInto(self.data(), self.data(), count, type, op);
      expectEqual(type, self.data(), aa, count, label(type, op, count, "reduceInto dst==src"));

      Buffer x(type, a), y(type, b), out(type, std::vector<uint8_t>(a.size()));
      reduce(out.data(), x.data(), y.data(), count, type, op);
      expectEqual(type, out.data(), ab, count, label(type, op, count, "reduce"));

      reduce(y.data(), x.data(), y.data(), count, type, op);
      expectEqual(type, y.data(), ab, count, label(type, op, count, "reduce out==b"));

      Buffer y2(type, b);
      reduce(x.data(), x.data(), y2.data(), count, type, op);
      expectEqual(type, x.data(), ab, count, label(type, op, count, "reduce out==a"));

      Buffer z(type, a);
      reduce(z.data(), z.data(), z.data(), count, type, op);
      expectEqual(type, z.data(), aa, count, label(type, op, count, "reduce out==a==b"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ReduceKernel, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return std::string(toString(info.param)); });

TEST(ReduceKernel, CountZeroTouchesNothing) {
  for (DataType type : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      reduceInto(nullptr, nullptr, 0, type, op);
      reduce(nullptr, nullptr, nullptr, 0, type, op);
    }
    divideBy(nullptr, 0, type, 3);
  }
}

// The special-value rule (reduce.cc): a NaN in either operand, in either position and with any
// sign or payload, gives the canonical NaN, for every op; min/max order -0 below +0 in either
// order; out == b still computes op(a, b).
TEST(ReduceKernel, NanPropagatesAsTheCanonicalNanAndMinusZeroIsTheSmallerZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float negNan = -std::numeric_limits<float>::quiet_NaN();
  const uint32_t canonical = 0x7fc00000;
  auto bits = [](float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; };
  for (ReduceOp op : kAllOps) {
    for (float n : {nan, negNan}) {
      std::vector<float> dst(100, n), src(100, 1.0f);
      reduceInto(dst.data(), src.data(), dst.size(), DataType::f32, op);
      for (float v : dst) EXPECT_EQ(bits(v), canonical) << toString(op);
      std::vector<float> dst2(100, 1.0f), src2(100, n);
      reduceInto(dst2.data(), src2.data(), dst2.size(), DataType::f32, op);
      for (float v : dst2) EXPECT_EQ(bits(v), canonical) << toString(op);
      std::vector<float> a(100, 2.0f), b(100, n);
      reduce(b.data(), a.data(), b.data(), b.size(), DataType::f32, op);
      for (float v : b) EXPECT_EQ(bits(v), canonical) << toString(op) << " out==b";
    }
  }
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    for (bool negFirst : {false, true}) {
      std::vector<double> dst(37, negFirst ? -0.0 : 0.0), src(37, negFirst ? 0.0 : -0.0);
      reduceInto(dst.data(), src.data(), dst.size(), DataType::f64, op);
      for (double v : dst) EXPECT_EQ(std::signbit(v), op == ReduceOp::min) << toString(op) << negFirst;
    }
  }
  std::vector<float> inf(40, std::numeric_limits<float>::infinity()), minusInf(40, -std::numeric_limits<float>::infinity());
  reduceInto(inf.data(), minusInf.data(), inf.size(), DataType::f32, ReduceOp::sum);
  for (float v : inf) EXPECT_EQ(bits(v), canonical) << "inf + -inf";  // x86 would give 0xffc00000
}

// Hosts with and without AVX2 must agree on every bit, NaNs included, so the 16-bit paths
// are checked exactly here: a NaN operand of any payload, on either side, gives the type's
// canonical NaN for every op. 37 elements cover the vector loop and its tail.
TEST(ReduceKernel, HalfTypesGiveTheCanonicalNanExactly) {
  struct Case {
    DataType type;
    uint16_t one;  // 1.5
    std::vector<uint16_t> nans;
    uint16_t canonical;
  };
  const Case cases[] = {
      {DataType::f16, 0x3e00, {0x7c01, 0xfd00, 0x7e00, 0x7fff}, 0x7e00},
      {DataType::bf16, 0x3fc0, {0x7f81, 0xffa0, 0x7fc0, 0x7fff}, 0x7fc0},
  };
  constexpr size_t kCount = 37;
  for (const Case& c : cases) {
    for (ReduceOp op : kAllOps) {
      std::vector<uint16_t> nanFirst(kCount), numberFirst(kCount), numbers(kCount, c.one);
      for (size_t i = 0; i < kCount; ++i) nanFirst[i] = c.nans[i % c.nans.size()];
      reduceInto(nanFirst.data(), numbers.data(), kCount, c.type, op);
      numberFirst = numbers;
      std::vector<uint16_t> nans(kCount);
      for (size_t i = 0; i < kCount; ++i) nans[i] = c.nans[i % c.nans.size()];
      reduceInto(numberFirst.data(), nans.data(), kCount, c.type, op);
      for (size_t i = 0; i < kCount; ++i) {
        EXPECT_EQ(nanFirst[i], c.canonical) << toString(c.type) << " " << toString(op) << " " << i;
        EXPECT_EQ(numberFirst[i], c.canonical) << toString(c.type) << " " << toString(op) << " " << i;
      }
    }
  }
}

TEST(ReduceKernel, IntegerSumAndProdWrap) {
  std::vector<int32_t> a = {std::numeric_limits<int32_t>::max(), -2, 1 << 20};
  std::vector<int32_t> b = {1, std::numeric_limits<int32_t>::min(), 1 << 12};
  auto sum = a;
  reduceInto(sum.data(), b.data(), 3, DataType::i32, ReduceOp::sum);
  EXPECT_EQ(sum[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(sum[1], std::numeric_limits<int32_t>::max() - 1);
  auto prod = a;
  reduceInto(prod.data(), b.data(), 3, DataType::i32, ReduceOp::prod);
  EXPECT_EQ(prod[2], 0);  // 2^32 wraps to 0
  std::vector<uint8_t> u = {200}, v = {100};
  reduceInto(u.data(), v.data(), 1, DataType::u8, ReduceOp::sum);
  EXPECT_EQ(u[0], 44);
}

// --- divideBy ---

template <class T>
void checkIntegerDivide(DataType type, const std::vector<T>& values, int divisor) {
  std::vector<T> buf(values.size() + 1);
  std::copy(values.begin(), values.end(), buf.begin() + 1);
  divideBy(buf.data() + 1, values.size(), type, divisor);
  for (size_t i = 0; i < values.size(); ++i) {
    // Truncation toward zero, written as magnitude division plus sign.
    __int128 x = values[i];
    __int128 magnitude = (x < 0 ? -x : x) / divisor;
    auto want = static_cast<T>(x < 0 ? -magnitude : magnitude);
    EXPECT_EQ(buf[i + 1], want) << toString(type) << " " << static_cast<int64_t>(values[i])
                                << " / " << divisor;
  }
}

template <class T>
std::vector<T> integerSamples() {
  std::vector<T> v = {0, 1, 2, 3, 5, 6, 7, 100, std::numeric_limits<T>::max(),
                      std::numeric_limits<T>::min(), static_cast<T>(std::numeric_limits<T>::max() - 1)};
  if constexpr (std::is_signed_v<T>) {
    for (T x : {-1, -2, -3, -5, -7, -100}) v.push_back(x);
    v.push_back(static_cast<T>(std::numeric_limits<T>::min() + 1));
  }
  uint64_t state = 7;
  while (v.size() < 600) v.push_back(static_cast<T>(mix(state)));  // past a 256-byte block
  return v;
}

TEST(DivideBy, IntegersTruncateTowardZero) {
  for (int d : {1, 2, 3, 7, 8, 300, 1 << 30}) {
    checkIntegerDivide(DataType::i8, integerSamples<int8_t>(), d);
    checkIntegerDivide(DataType::u8, integerSamples<uint8_t>(), d);
    checkIntegerDivide(DataType::i32, integerSamples<int32_t>(), d);
    checkIntegerDivide(DataType::u32, integerSamples<uint32_t>(), d);
    checkIntegerDivide(DataType::i64, integerSamples<int64_t>(), d);
    checkIntegerDivide(DataType::u64, integerSamples<uint64_t>(), d);
  }
}

TEST(DivideBy, FloatsDivideInTheirOwnPrecision) {
  for (DataType type : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16}) {
    for (int d : {1, 3, 7, 8}) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{4097}}) {
        auto input = makeInput(type, count, 3);
        Buffer buf(type, input);
        divideBy(buf.data(), count, type, d);
        size_t size = sizeOf(type);
        std::vector<uint8_t> want(input.size());
        for (size_t i = 0; i < count; ++i) {
          const uint8_t* in = input.data() + i * size;
          uint8_t* w = want.data() + i * size;
          if (type == DataType::f32) {
            float x;
            std::memcpy(&x, in, 4);
            auto q = static_cast<float>(static_cast<double>(x) / d);
            std::memcpy(w, &q, 4);
          } else if (type == DataType::f64) {
            double x;
            std::memcpy(&x, in, 8);
            double q = x / d;
            std::memcpy(w, &q, 8);
          } else {
            uint16_t h;
            std::memcpy(&h, in, 2);
            bool isHalf = type == DataType::f16;
            float x = isHalf ? halfToFloat(h) : bf16ToFloat(h);
            auto q = static_cast<float>(static_cast<double>(x) / d);
            uint16_t r = isHalf ? floatToHalf(q) : floatToBf16(q);
            std::memcpy(w, &r, 2);
          }
        }
        expectEqual(type, buf.data(), want, count,
                    std::string(toString(type)) + " / " + std::to_string(d) + " n=" +
                        std::to_string(count));
      }
    }
  }
}

TEST(DivideBy, AverageOfHalfValues) {
  std::vector<uint16_t> buf = {floatToHalf(6.0f), floatToHalf(-1.0f), 0x7c00};
  divideBy(buf.data(), buf.size(), DataType::f16, 4);
  EXPECT_EQ(buf[0], floatToHalf(1.5f));
  EXPECT_EQ(buf[1], floatToHalf(-0.25f));
  EXPECT_EQ(buf[2], 0x7c00);
}

// --- half.h conversions ---

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t floatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

bool halfIsNan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0; }

TEST(HalfConversion, KnownBitPatterns) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(0x3ffp-24f), 0x03ff);  // largest subnormal
  EXPECT_EQ(floatToHalf(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(halfIsNan(floatToHalf(std::numeric_limits<float>::quiet_NaN())));
  // NaNs keep their sign and top payload bits and come out quiet, as with F16C.
  EXPECT_EQ(floatToHalf(bitsToFloat(0x7f800001)), 0x7e00);  // payload only in low bits
  EXPECT_EQ(floatToHalf(bitsToFloat(0xff800001)), 0xfe00);
  EXPECT_EQ(floatToHalf(bitsToFloat(0x7fc02000)), 0x7e01);

  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfToFloat(0x03ff), 0x3ffp-24f);
  EXPECT_EQ(floatToBits(halfToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7c01)));  // signalling NaN stays NaN
}

TEST(HalfConversion, RoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(2049.0f), floatToHalf(2048.0f));  // tie, 2048 is even
  EXPECT_EQ(floatToHalf(2049.0f), 0x6800);
  EXPECT_EQ(floatToHalf(2051.0f), 0x6802);  // tie, 2052 is even
  EXPECT_EQ(floatToHalf(2049.5f), 0x6801);  // above the tie
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // tie with an odd significand: up, to inf
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);  // tie between 0 and the smallest subnormal
  EXPECT_EQ(floatToHalf(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(floatToHalf(0x3p-25f), 0x0002);  // tie between 1 and 2 subnormal ulps
  EXPECT_EQ(floatToHalf(0x1p-26f), 0x0000);
  EXPECT_EQ(floatToHalf(-0x1p-26f), 0x8000);
  EXPECT_EQ(floatToHalf(0x7ffp-25f), 0x0400);  // largest subnormal + half ulp: to normal
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);  // tie below 1 + 2^-10
  EXPECT_EQ(floatToHalf(1.0f + 0x3p-11f), 0x3c02);
}

TEST(HalfConversion, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    auto half = static_cast<uint16_t>(h);
    float f = halfToFloat(half);
    if (halfIsNan(half)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_TRUE(halfIsNan(floatToHalf(f))) << std::hex << h;
    } else {
      ASSERT_EQ(floatToHalf(f), half) << std::hex << h;
    }
  }
}

#ifdef COLL_TEST_F16C
// Ranks on different hosts must agree bit for bit, and reduce.cc picks F16C or the portable
// code per CPU, so the two must match, NaNs included.
__attribute__((target("f16c"))) uint16_t hardwareToHalf(float f) {
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
__attribute__((target("f16c"))) float hardwareToFloat(uint16_t h) { return _cvtsh_ss(h); }

TEST(HalfConversion, PortableMatchesF16c) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || (ecx & bit_F16C) == 0) {
    GTEST_SKIP() << "CPU has no F16C";
  }
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    auto half = static_cast<uint16_t>(h);
    ASSERT_EQ(floatToBits(halfToFloat(half)), floatToBits(hardwareToFloat(half))) << std::hex << h;
    // Every rounding boundary: the midpoint to the next half and its float neighbours.
    uint32_t lo = floatToBits(halfToFloat(half));
    uint32_t next = floatToBits(halfToFloat(static_cast<uint16_t>(half + 1)));
    if (halfIsNan(half) || (h & 0x7fff) >= 0x7bff) continue;
    uint32_t mid = lo + (next - lo) / 2;
    for (uint32_t bits : {lo, lo + 1, mid - 1, mid, mid + 1}) {
      float f = bitsToFloat(bits);
      ASSERT_EQ(floatToHalf(f), hardwareToHalf(f)) << std::hex << bits;
    }
  }
  // A coarse sweep of all floats, NaN payloads, tiny and huge values included.
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4093) {
    float f = bitsToFloat(static_cast<uint32_t>(bits));
    ASSERT_EQ(floatToHalf(f), hardwareToHalf(f)) << std::hex << bits;
  }
}
#endif

TEST(Bf16Conversion, KnownBitPatterns) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808001)), 0x3f81);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  uint16_t nan = floatToBf16(bitsToFloat(0x7f800001));
  EXPECT_TRUE((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    auto b = static_cast<uint16_t>(h);
    bool nanInput = (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
    if (!nanInput) {
      ASSERT_EQ(floatToBf16(bf16ToFloat(b)), b) << std::hex << h;
    }
  }
}

}  // namespace
}  // namespace coll::reduce
