// Element access by DataType for the multi-rank tests: values go in and out as double, which
// is exact for every value these tests generate (|v| < 2^53 and representable in the type).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "coll/types.h"
#include "reduce/half.h"

namespace coll::test {

inline constexpr DataType kAllTypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16,
                                         DataType::i8,  DataType::u8,  DataType::i32, DataType::u32,
                                         DataType::i64, DataType::u64};
inline constexpr ReduceOp kAllOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max, ReduceOp::avg};

inline bool isFloating(DataType t) {
  return t == DataType::f32 || t == DataType::f64 || t == DataType::f16 || t == DataType::bf16;
}
inline bool isSigned(DataType t) {
  return isFloating(t) || t == DataType::i8 || t == DataType::i32 || t == DataType::i64;
}

template <class T>
T loadAs(const void* buf, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(buf) + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void storeAs(void* buf, size_t i, T v) {
  std::memcpy(static_cast<char*>(buf) + i * sizeof(T), &v, sizeof(T));
}

inline double load(DataType t, const void* buf, size_t i) {
  switch (t) {
    case DataType::f32: return loadAs<float>(buf, i);
    case DataType::f64: return loadAs<double>(buf, i);
    case DataType::f16: return reduce::halfToFloat(loadAs<uint16_t>(buf, i));
    case DataType::bf16: return reduce::bf16ToFloat(loadAs<uint16_t>(buf, i));
    case DataType::i8: return loadAs<int8_t>(buf, i);
    case DataType::u8: return loadAs<uint8_t>(buf, i);
    case DataType::i32: return loadAs<int32_t>(buf, i);
    case DataType::u32: return loadAs<uint32_t>(buf, i);
    case DataType::i64: return static_cast<double>(loadAs<int64_t>(buf, i));
    case DataType::u64: return static_cast<double>(loadAs<uint64_t>(buf, i));
  }
  return 0;
}

// Rounds to the type (nearest even for floating types; integers must be in range).
inline void store(DataType t, void* buf, size_t i, double v) {
  switch (t) {
    case DataType::f32: return storeAs<float>(buf, i, static_cast<float>(v));
    case DataType::f64: return storeAs<double>(buf, i, v);
    case DataType::f16: return storeAs<uint16_t>(buf, i, reduce::floatToHalf(static_cast<float>(v)));
    case DataType::bf16: return storeAs<uint16_t>(buf, i, reduce::floatToBf16(static_cast<float>(v)));
    case DataType::i8: return storeAs<int8_t>(buf, i, static_cast<int8_t>(v));
    case DataType::u8: return storeAs<uint8_t>(buf, i, static_cast<uint8_t>(v));
    case DataType::i32: return storeAs<int32_t>(buf, i, static_cast<int32_t>(v));
    case DataType::u32: return storeAs<uint32_t>(buf, i, static_cast<uint32_t>(v));
    case DataType::i64: return storeAs<int64_t>(buf, i, static_cast<int64_t>(v));
    case DataType::u64: return storeAs<uint64_t>(buf, i, static_cast<uint64_t>(v));
  }
}

// v rounded to the type, as a double.
inline double roundTo(DataType t, double v) {
  char one[8];
  store(t, one, 0, v);
  return load(t, one, 0);
}

// A well-mixed 64-bit hash (splitmix64's finaliser).
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline uint64_t mix(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) {
  return mix(mix(mix(mix(a) ^ b) ^ c) ^ d);
}

// FNV-1a over bytes: what ranks compare to prove bit-identical results.
inline uint64_t hashBytes(const void* data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

inline std::vector<char> buffer(DataType t, size_t count, unsigned char fill) {
  return std::vector<char>(count * sizeOf(t) + 1, static_cast<char>(fill));  // +1: never empty
}

}  // namespace coll::test
