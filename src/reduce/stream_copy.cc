#include "reduce/stream_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "reduce/target_clones.h"

#ifdef COLL_X86
#include <emmintrin.h>
#endif

namespace coll::reduce {

#ifdef COLL_X86
void copyStreaming(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  // Stream stores need 16-byte aligned destinations: the unaligned head is copied plainly.
  size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  size_t body = bytes - bytes % 64;
  for (size_t i = 0; i < body; i += 64) {
    __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    __m128i v2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    __m128i v3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), v0);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), v1);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), v2);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), v3);
  }
  std::memcpy(d + body, s + body, bytes - body);
  _mm_sfence();  // stream stores are weakly ordered: make them visible before any flag we set
}
#else
void copyStreaming(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
#endif

#if defined(__GNUC__)
namespace {
// Far enough ahead to cover the latency of memory at this copy's speed (2 KiB measured best
// of 0.5-8 KiB), near enough that the lines are still in L1 when the copy reaches them.
constexpr uintptr_t kPrefetchAhead = 2048;
typedef uint8_t Bytes32 __attribute__((vector_size(32), aligned(1), may_alias));
}  // namespace

COLL_CLONES void copyPrefetching(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(s) + kPrefetchAhead;  // may pass src's end: a hint never faults
  size_t body = bytes - bytes % 64;
  for (size_t i = 0; i < body; i += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(ahead + i));
    Bytes32 lo = *reinterpret_cast<const Bytes32*>(s + i);
    Bytes32 hi = *reinterpret_cast<const Bytes32*>(s + i + 32);
    *reinterpret_cast<Bytes32*>(d + i) = lo;
    *reinterpret_cast<Bytes32*>(d + i + 32) = hi;
  }
  std::memcpy(d + body, s + body, bytes - body);
}
#else
void copyPrefetching(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
#endif

}  // namespace coll::reduce
