// Portable IEEE binary16 conversions. reduce.cc uses the F16C instructions instead where the
// CPU has them; these must give the same bits, because ranks on different hosts have to
// agree on every reduced element. The unit test checks both against each other.
#include "reduce/half.h"

namespace coll::reduce {
namespace {

constexpr uint32_t kF32Inf = 0x7f800000u;
constexpr uint32_t kF32QuietBit = 0x00400000u;
// Float exponent bias (127) minus half's (15), in place in a float's exponent field.
constexpr uint32_t kRebias = 112u << 23;
// |f| at or above 65520 (halfway between 65504, the largest half, and 65536) rounds to
// infinity: 65504 has an odd significand, so the tie goes up.
constexpr uint32_t kF32HalfOverflow = 0x477ff000u;
constexpr uint32_t kF32HalfMinNormal = 0x38800000u;  // 2^-14
// Below 2^-25 (exactly half the smallest subnormal) everything rounds to zero; 2^-25
// itself ties to the even neighbour, zero, and is handled by the general subnormal path.
constexpr uint32_t kF32HalfUnderflow = 0x33000000u;  // 2^-25

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t toBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Shifts right by `shift` (1..31) rounding to nearest, ties to even.
uint32_t shiftRoundEven(uint32_t value, unsigned shift) {
  uint32_t half = 1u << (shift - 1);
  uint32_t odd = (value >> shift) & 1u;
  return (value + half - 1 + odd) >> shift;
}

}  // namespace

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) {
    // Signalling NaNs come out quiet, as VCVTPH2PS makes them.
    uint32_t nan = mantissa != 0 ? kF32QuietBit : 0;
    return fromBits(sign | kF32Inf | nan | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float and always a normal float.
    float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return fromBits(sign | toBits(magnitude));
  }
  return fromBits(sign | (((exponent << 23) | (mantissa << 13)) + kRebias));
}

uint16_t floatToHalf(float f) {
  uint32_t bits = toBits(f);
  auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > kF32Inf) {
    // NaN: keep the top payload bits and force the quiet bit, so a payload that lives only
    // in the low bits cannot turn into infinity. Matches VCVTPS2PH.
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude & 0x7fffffu) >> 13));
  }
  if (magnitude >= kF32HalfOverflow) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= kF32HalfMinNormal) {
    // Rounding may carry into the exponent; that is the correct next binade (or 0x7c00
    // never, since overflow was excluded above).
    return static_cast<uint16_t>(sign | shiftRoundEven(magnitude - kRebias, 13));
  }
  if (magnitude < kF32HalfUnderflow) return sign;
  // Subnormal result: the value is significand * 2^(exponent - 150); in units of 2^-24
  // that is significand >> (126 - exponent), with exponent in [102, 112] here.
  uint32_t exponent = magnitude >> 23;
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shiftRoundEven(significand, 126 - exponent));
}

}  // namespace coll::reduce
