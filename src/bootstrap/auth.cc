#include "bootstrap/auth.h"

#include <cstring>
#include <random>

namespace coll::bootstrap {
namespace {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  uint64_t v0, v1, v2, v3;
  void round() {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  }
};

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only (x86-64, aarch64)
}

// SipHash-2-4 (Aumasson & Bernstein), a keyed MAC designed for short messages.
uint64_t sipHash24(uint64_t k0, uint64_t k1, std::string_view msg) {
  SipState s{k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
             k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
  const auto* p = reinterpret_cast<const uint8_t*>(msg.data());
  size_t n = msg.size(), full = n / 8 * 8;
  for (size_t i = 0; i < full; i += 8) {
    uint64_t m = load64(p + i);
    s.v3 ^= m; s.round(); s.round(); s.v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
  for (size_t i = full; i < n; ++i) last |= static_cast<uint64_t>(p[i]) << (8 * (i - full));
  s.v3 ^= last; s.round(); s.round(); s.v0 ^= last;
  s.v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

}  // namespace

Nonce randomNonce() {
  std::random_device rd;  // /dev/urandom on Linux
  Nonce n;
  for (size_t i = 0; i < n.size(); i += 4) {
    uint32_t r = rd();
    std::memcpy(n.data() + i, &r, 4);
  }
  return n;
}

uint64_t computeMac(const std::string& secret, std::string_view message) {
  // Derive a 128-bit key from a secret of any length with two fixed-key passes.
  uint64_t k0 = sipHash24(0x636f6c6c2d6b3030ull, 0x0123456789abcdefull, secret);
  uint64_t k1 = sipHash24(0x636f6c6c2d6b3131ull, 0xfedcba9876543210ull, secret);
  return sipHash24(k0, k1, message);
}

std::string generateSecret() {
  static const char* kHex = "0123456789abcdef";
  std::string s;  // 128 bits as 32 hex chars: must fit collUniqueId's 62-byte field
  for (uint8_t b : randomNonce()) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

}  // namespace coll::bootstrap
