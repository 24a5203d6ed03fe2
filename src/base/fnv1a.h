// FNV-1a, 64 bits: a hash that is the same on every build and machine, for fingerprints that
// ranks compare (wire tags, a topology, a model's parameters) and for telling kinds of things
// apart. Not a secret and not collision-proof against a chooser of inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace coll {

class Fnv1a {
 public:
  Fnv1a& addBytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * kPrime;
    return *this;
  }
  Fnv1a& add(std::string_view text) { return addBytes(text.data(), text.size()); }
  // The value's 8 bytes, least significant first, whatever the machine's byte order.
  Fnv1a& add(uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h_ = (h_ ^ (v & 0xff)) * kPrime;
    return *this;
  }
  uint64_t value() const { return h_; }

 private:
  static constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ull;
  static constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h_ = kOffsetBasis;
};

inline uint64_t fnv1a(std::string_view text) { return Fnv1a().add(text).value(); }

}  // namespace coll
