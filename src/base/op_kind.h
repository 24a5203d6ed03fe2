// What a call does, as every layer names it: the executor's ops, the ledger, and the tag on
// every message (base/wire_tag.h), which is why it lives at the bottom.
#pragma once

#include <cstdint>

namespace coll {

enum class OpKind : uint8_t {
  allreduce = 1, broadcast, reduce, allgather, reducescatter, alltoall, gather, scatter, send, recv, barrier,
  group,  // send/recv issued between groupStart and groupEnd, run as one fused schedule
};
constexpr uint8_t kLastOpKind = static_cast<uint8_t>(OpKind::group);

const char* toString(OpKind kind);
// Inline: every op's issue asks these several times.
constexpr bool isPointToPoint(OpKind kind) { return kind == OpKind::send || kind == OpKind::recv; }
// all-reduce, reduce, reduce-scatter: the reduction op matters
constexpr bool reduces(OpKind k) { return k == OpKind::allreduce || k == OpKind::reduce || k == OpKind::reducescatter; }
// a root, or a peer for send/recv
constexpr bool rooted(OpKind k) {
  return k == OpKind::broadcast || k == OpKind::reduce || k == OpKind::gather || k == OpKind::scatter ||
         isPointToPoint(k);
}

}  // namespace coll
