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
bool isPointToPoint(OpKind kind);
bool reduces(OpKind kind);  // all-reduce, reduce, reduce-scatter: the reduction op matters
bool rooted(OpKind kind);   // a root, or a peer for send/recv

}  // namespace coll
