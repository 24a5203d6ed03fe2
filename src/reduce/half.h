// IEEE binary16 and bfloat16 conversions (round to nearest even; NaN stays NaN).
#pragma once

#include <cstdint>
#include <cstring>

namespace coll::reduce {

inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);

}  // namespace coll::reduce
