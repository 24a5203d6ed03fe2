// The UCP tag of a coll message. UCP matches tags worker-wide, so the sender's rank must be in
// the tag; the receiver probes for "the next message from rank r" (sender bits masked, the rest
// ignored) and then checks coll's tag and the length itself, which is how a mismatch becomes an
// error naming both instead of a receive that never matches.
//
//   63 ........ 44 | 43      | 42 ............. 0
//   sender rank    | control | coll tag, low 43 bits
//
// coll's tags (base/wire_tag.h) hold the call (kind, type, op, a check of count, root and
// algorithm) in their low 32 bits and the sequence above: 43 bits keep 11 bits of sequence,
// enough to tell apart the neighbouring calls a disagreement mixes up (matching itself is
// FIFO per sender, not by sequence). Control messages (hello, goodbye) have the
// control bit set and are matched by their exact tag, so they never overtake data in matching.
#pragma once

#include <cstdint>

namespace coll::transport::ucx {

constexpr int kRankBits = 20;
constexpr int kMaxRanks = 1 << kRankBits;
constexpr int kRankShift = 64 - kRankBits;
constexpr uint64_t kControlBit = 1ull << 43;
constexpr uint64_t kPayloadMask = kControlBit - 1;
constexpr uint64_t kRankMask = ~0ull << kRankShift;

inline uint64_t dataTag(int sender, uint64_t coll_tag) {
  return (static_cast<uint64_t>(sender) << kRankShift) | (coll_tag & kPayloadMask);
}
// Control messages: the hello of connect() and the goodbye of a closing or aborting rank.
enum class Control : uint64_t { hello = 1, goodbye = 2 };
inline uint64_t controlTag(int sender, Control kind) {
  return (static_cast<uint64_t>(sender) << kRankShift) | kControlBit | static_cast<uint64_t>(kind);
}
// What a probe for the next data message from `sender` masks in.
constexpr uint64_t kProbeMask = kRankMask | kControlBit;
constexpr uint64_t kExactMask = ~0ull;
inline uint64_t payloadOf(uint64_t ucp_tag) { return ucp_tag & kPayloadMask; }

}  // namespace coll::transport::ucx
