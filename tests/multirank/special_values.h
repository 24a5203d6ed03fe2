// NaN, ±Inf and ±0 as bits of each float dtype, and the scalar reference of coll's one rule for
// them (src/reduce/reduce.cc, docs/ARCHITECTURE.md "Special values"): a result computed from a
// NaN is the canonical quiet NaN; min/max order -0 below +0. Written from the rule, not from the
// kernels: operands are decoded to double, combined by IEEE arithmetic in double (exact for the
// values used: 1, -2, 0.5, zeros and infinities, up to 8 operands), and encoded back.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "coll/types.h"

namespace coll::test::special {

// The values operands are drawn from: two NaNs of different sign and payload (a rank's NaN
// must not decide the result's bits), both infinities, both zeros, and exact finite values.
enum Kind : int { kNan, kNegNanPayload, kPosInf, kNegInf, kPosZero, kNegZero, kOne, kMinusTwo, kHalf, kKinds };

inline uint64_t canonicalNanBits(DataType t) {
  switch (t) {
    case DataType::f64: return 0x7ff8000000000000ull;
    case DataType::f16: return 0x7e00;
    case DataType::bf16: return 0x7fc0;
    default: return 0x7fc00000;
  }
}

inline uint64_t negNanBits(DataType t) {
  switch (t) {
    case DataType::f64: return 0xfff8000000000001ull;
    case DataType::f16: return 0xfe01;
    case DataType::bf16: return 0xffc1;
    default: return 0xffc00001;
  }
}

// Bits of a non-NaN double (±Inf, ±0 or a value exact in the type) in the type.
inline uint64_t encode(DataType t, double v) {
  if (t == DataType::f64) { uint64_t b; std::memcpy(&b, &v, 8); return b; }
  float f = static_cast<float>(v);
  uint32_t fb; std::memcpy(&fb, &f, 4);
  if (t == DataType::f32) return fb;
  if (t == DataType::bf16) return fb >> 16;  // exact values only: truncation is exact
  // f16: sign, then exponent rebiased from 127 to 15, mantissa 23 -> 10 bits (exact values only).
  uint32_t sign = (fb >> 16) & 0x8000, exp = (fb >> 23) & 0xff, man = fb & 0x7fffff;
  if (exp == 0xff) return sign | 0x7c00;  // infinity
  if (exp == 0) return sign;              // zero
  return sign | ((exp - 127 + 15) << 10) | (man >> 13);
}

inline uint64_t bitsOf(DataType t, Kind k) {
  switch (k) {
    case kNan: return canonicalNanBits(t);
    case kNegNanPayload: return negNanBits(t);
    case kPosInf: return encode(t, std::numeric_limits<double>::infinity());
    case kNegInf: return encode(t, -std::numeric_limits<double>::infinity());
    case kPosZero: return encode(t, 0.0);
    case kNegZero: return encode(t, -0.0);
    case kOne: return encode(t, 1.0);
    case kMinusTwo: return encode(t, -2.0);
    default: return encode(t, 0.5);
  }
}

inline double valueOf(Kind k) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const double values[] = {NAN, NAN, inf, -inf, 0.0, -0.0, 1.0, -2.0, 0.5};
  return values[k];
}

// The rule over the operands in rank order (the order is irrelevant to the result: that is the
// point). Returns the bits every rank must hold.
inline uint64_t expectedBits(DataType t, ReduceOp op, const Kind* operands, int n) {
  if (n == 1) return bitsOf(t, operands[0]);  // nothing is combined: the input, as it is
  for (int r = 0; r < n; ++r)
    if (operands[r] == kNan || operands[r] == kNegNanPayload) return canonicalNanBits(t);
  double acc = valueOf(operands[0]);
  for (int r = 1; r < n; ++r) {
    double v = valueOf(operands[r]);
    if (op == ReduceOp::sum) acc = acc + v;
    else if (op == ReduceOp::prod) acc = acc * v;
    else if (acc == v) {  // a tie: equal values, or zeros of either sign; -0 is the smaller zero
      bool negative = op == ReduceOp::min ? std::signbit(acc) || std::signbit(v) : std::signbit(acc) && std::signbit(v);
      acc = negative ? -std::fabs(acc) : std::fabs(acc);
    } else acc = op == ReduceOp::min ? std::fmin(acc, v) : std::fmax(acc, v);
  }
  if (std::isnan(acc)) return canonicalNanBits(t);  // inf - inf, 0 * inf
  return encode(t, acc);
}

}  // namespace coll::test::special
