// The tag on every message of a collective, and the error a receiver reports when a message's
// tag is not the one its own call expects.
//
// The tag names the call that sent the message, so ranks that disagree about a call fail it
// with Mismatch instead of combining the wrong bytes, at no extra message (DESIGN.md):
//
//   63 ............ 32 | 31 ......... 16 | 15 | 14 ... 12 | 11 .... 8 | 7 ....... 0
//   sequence (32 bits) | call check (16) | 0  | op + 1    | type + 1  | kind
//
// kind: an OpKind, or an internal kind (link probes, COLL_CHECK's exchange: 0xB0 and up).
// type and op: 0 where the call has none or they do not matter (the op outside reductions).
// call check: a hash of count, root and algorithm, so a difference there is named only as
// such; the ledger's report (comm/stall_report.h) then names both calls exactly. UCX keeps
// the low 43 bits (transport/ucx/tag.h), 11 of them sequence, which still tells apart the
// neighbouring calls a disagreement mixes up.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/op_kind.h"
#include "base/status.h"

namespace coll {

// What of a call goes into its tag. Fields that do not apply stay at their defaults.
struct WireCall {
  OpKind kind = OpKind::allreduce;
  int type = -1;  // DataType
  int op = -1;    // ReduceOp
  uint64_t count = 0;
  int root = -1;
  std::string_view algorithm;
};

// Internal messages and point-to-point (whose two sides need not agree on types): the kind
// and sequence only.
uint64_t wireTag(uint64_t sequence, uint8_t kind);
uint64_t wireTag(uint64_t sequence, const WireCall& call);

// "allreduce(f32, sum) call 5", "broadcast(u8) call 7 [check 0x3a1f]".
std::string describeWireTag(uint64_t tag);

// Whether the tag carries a collective call's fields (not point-to-point, a group or an
// internal message), so a message of another call is a disagreement.
bool carriesCall(uint64_t tag);
// The sent tag's call number against ours: < 0 earlier, 0 the same, > 0 later (wrapping).
int32_t callDistance(uint64_t sent_tag, uint64_t expected_tag);

// A message arrived whose tag or length differs from what the posted receive expects. The
// error names both calls and what differs (collective, call number, type, op, count/root/
// algorithm, or only the length). Every transport reports it through here.
Status messageMismatch(int peer, uint64_t sent_tag, uint64_t sent_bytes, uint64_t expected_tag,
                       uint64_t expected_bytes);
// A peer's oldest unread message belongs to another call while this rank's call expects
// nothing more from it (found by peeking: exec/executor.cc).
Status unexpectedMessage(int peer, uint64_t sent_tag, uint64_t sent_bytes, uint64_t expected_tag);

}  // namespace coll
