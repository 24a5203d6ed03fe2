#include "perf_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

namespace coll::bench {
namespace {

// The 16-bit float formats as storage only. The check converts them itself rather than
// through the library's kernels, so that it stays an independent reference.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Round to nearest even. The fills only ever store integers the format holds exactly, so
// rounding matters for the poison (NaN) and for robustness, not for the values checked.
uint16_t halfFromFloat(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t rawExp = static_cast<int32_t>((x >> 23) & 0xffu);
  uint32_t mant = x & 0x7fffffu;
  if (rawExp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int32_t exp = rawExp - 127 + 15;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    uint32_t full = mant | 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t kept = full >> shift;
    uint32_t rest = full & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (kept & 1u))) ++kept;
    return static_cast<uint16_t>(sign | kept);
  }
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(h);
}

double halfToDouble(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(mant | 0x400, exp - 25);
  }
  return (h & 0x8000) ? -v : v;
}

uint16_t bf16FromFloat(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

double bf16ToDouble(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

template <class T>
T fromDouble(double v) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{halfFromFloat(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16{bf16FromFloat(static_cast<float>(v))};
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
double toDouble(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return halfToDouble(v.bits);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bf16ToDouble(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

// The value each type's patterns leave out (see exactRange), so it can mark unwritten data.
template <class T>
T poisonValue() {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{0x7e00};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16{0x7fc0};
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else if constexpr (std::is_signed_v<T>) {
    return std::numeric_limits<T>::min();
  } else {
    return std::numeric_limits<T>::max();
  }
}

template <class F>
void visitType(DataType type, F&& f) {
  switch (type) {
    case DataType::f32: f(std::type_identity<float>{}); return;
    case DataType::f64: f(std::type_identity<double>{}); return;
    case DataType::f16: f(std::type_identity<Half>{}); return;
    case DataType::bf16: f(std::type_identity<BFloat16>{}); return;
    case DataType::i8: f(std::type_identity<int8_t>{}); return;
    case DataType::u8: f(std::type_identity<uint8_t>{}); return;
    case DataType::i32: f(std::type_identity<int32_t>{}); return;
    case DataType::u32: f(std::type_identity<uint32_t>{}); return;
    case DataType::i64: f(std::type_identity<int64_t>{}); return;
    case DataType::u64: f(std::type_identity<uint64_t>{}); return;
  }
}

// Integers every value and partial result must stay within: exact in the type, exact in the
// checker's doubles (hence 2^53 for 64-bit integers), and never the poison value.
struct ExactRange {
  int64_t lo;
  int64_t hi;
  bool floating;
  int mantissaBits;  // floating types: bits after the binary point
};

ExactRange exactRange(DataType type) {
  constexpr int64_t k2p53 = int64_t{1} << 53;
  switch (type) {
    case DataType::f32: return {-(1 << 24), 1 << 24, true, 23};
    case DataType::f64: return {-k2p53, k2p53, true, 52};
    case DataType::f16: return {-2048, 2048, true, 10};
    case DataType::bf16: return {-256, 256, true, 7};
    case DataType::i8: return {-127, 127, false, 0};
    case DataType::u8: return {0, 254, false, 0};
    case DataType::i32: return {-INT32_MAX, INT32_MAX, false, 0};
    case DataType::u32: return {0, int64_t{UINT32_MAX} - 1, false, 0};
    case DataType::i64: return {-k2p53, k2p53, false, 0};
    case DataType::u64: return {0, k2p53, false, 0};
  }
  return {0, 0, false, 0};
}

// Moved data spans as many distinct values as the type allows, up to this prime.
constexpr int64_t kMaxModulus = 1021;
// Summed data: per-rank magnitude cap, so small types and large types use similar patterns.
constexpr int64_t kMaxSummand = 500;

int floorLog2(int64_t v) {
  int bits = 0;
  while ((int64_t{2} << bits) <= v) ++bits;
  return bits;
}

}  // namespace

InputPattern::InputPattern(DataType type, std::optional<ReduceOp> op, int nranks)
    : type_(type), op_(op), nranks_(std::max(nranks, 1)) {
  ExactRange range = exactRange(type);
  bool isSigned = range.lo < 0;
  if (!op || *op == ReduceOp::min || *op == ReduceOp::max) {
    modulus_ = std::min(kMaxModulus, range.hi - range.lo + 1);
    offset_ = isSigned ? -(modulus_ / 2) : 0;
  } else if (*op == ReduceOp::prod) {
    kind_ = Kind::kPowers;
    powerRanks_ = std::min(nranks_, floorLog2(range.hi));
  } else if (*op == ReduceOp::sum) {
    int64_t perRank = std::min(kMaxSummand, range.hi / nranks_);
    if (perRank < 1) {
      kind_ = Kind::kOneHot;
    } else {
      modulus_ = (isSigned ? 2 : 1) * perRank + 1;
      offset_ = isSigned ? -perRank : 0;
    }
  } else {
    // avg: multiples of n, so the sum divides exactly and the average is exact in every
    // type, also when a hierarchy averages equal-sized groups first. Non-negative, so
    // integer division rounds the same under every convention.
    int64_t n = nranks_;
    int64_t perRank = std::min(kMaxSummand, range.hi / (n * n));
    if (perRank < 1) {
      kind_ = Kind::kOneHot;
    } else {
      modulus_ = perRank + 1;
      scale_ = n;
    }
  }
  switch (kind_) {
    case Kind::kSpread:
      for (int64_t s : {7, 5, 3, 1}) {
        if (std::gcd(s, modulus_) == 1) {
          stride_ = s;
          break;
        }
      }
      period_ = static_cast<size_t>(modulus_);
      break;
    case Kind::kPowers: period_ = 3; break;
    case Kind::kOneHot: period_ = static_cast<size_t>(nranks_); break;
  }
  // Too many ranks for exact multiples of n: the one-hot average 1/n rounds. Its inputs are
  // non-negative, so every partial sum is at most the result: n+1 roundings of at most one
  // unit in the last place each, whatever the order.
  if (op == ReduceOp::avg && kind_ == Kind::kOneHot && range.floating) {
    tolerance_ = (nranks_ + 1) * std::ldexp(1.0, -range.mantissaBits);
  }
}

double InputPattern::value(int rank, size_t index) const {
  auto r = static_cast<uint64_t>(rank);
  switch (kind_) {
    case Kind::kSpread:
      return static_cast<double>(
          scale_ * (offset_ +
                    static_cast<int64_t>((r * stride_ + index) % static_cast<uint64_t>(modulus_))));
    case Kind::kPowers: return (rank < powerRanks_ && (r + index) % 3 == 0) ? 2.0 : 1.0;
    case Kind::kOneHot: return (r + index) % static_cast<uint64_t>(nranks_) == 0 ? 1.0 : 0.0;
  }
  return 0;
}

double InputPattern::reduced(size_t index) const {
  ReduceOp op = op_.value_or(ReduceOp::sum);
  double acc = value(0, index);
  for (int r = 1; r < nranks_; ++r) {
    double v = value(r, index);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg: acc += v; break;
      case ReduceOp::prod: acc *= v; break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      case ReduceOp::max: acc = std::max(acc, v); break;
    }
  }
  if (op == ReduceOp::avg) {
    acc /= nranks_;
    if (!exactRange(type_).floating) acc = std::trunc(acc);
  }
  return acc;
}

void fillInput(void* buf, DataType type, size_t count, const InputPattern& pattern, int rank,
               size_t first) {
  visitType(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Converting through double per element is the slow part: convert one period only.
    size_t period = pattern.period();
    std::vector<T> cycle(period);
    for (size_t k = 0; k < period; ++k) cycle[k] = fromDouble<T>(pattern.value(rank, k));
    T* out = static_cast<T*>(buf);
    size_t phase = first % period;
    for (size_t k = 0; k < count; ++k) {
      out[k] = cycle[phase];
      if (++phase == period) phase = 0;
    }
  });
}

void fillPoison(void* buf, DataType type, size_t count) {
  visitType(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::fill_n(static_cast<T*>(buf), count, poisonValue<T>());
  });
}

int64_t countWrong(const void* buf, DataType type, size_t count,
                   const std::function<double(size_t)>& expected, double tolerance) {
  int64_t wrong = 0;
  visitType(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(buf);
    for (size_t k = 0; k < count; ++k) {
      double want = expected(k);
      // Written so that NaN (the poison) compares as wrong.
      if (!(std::fabs(toDouble(in[k]) - want) <= tolerance * std::fabs(want))) ++wrong;
    }
  });
  return wrong;
}

const char* ncclTypeName(DataType type) {
  switch (type) {
    case DataType::f32: return "float";
    case DataType::f64: return "double";
    case DataType::f16: return "half";
    case DataType::bf16: return "bfloat16";
    case DataType::i8: return "int8";
    case DataType::u8: return "uint8";
    case DataType::i32: return "int32";
    case DataType::u32: return "uint32";
    case DataType::i64: return "int64";
    case DataType::u64: return "uint64";
  }
  return "invalid";
}

const char* ncclOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
    case ReduceOp::avg: return "avg";
  }
  return "invalid";
}

}  // namespace coll::bench
